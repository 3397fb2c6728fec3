"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51) as Kafka answers them:
the validation of an alteration (one change per user per request, names, mechanisms, iteration
bounds, deleting what is not there), what a description lists, that a credential made from the
client's SaltedPassword authenticates, and the cluster permissions with an authorizer."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.static.primitive import i8, i32
from test_acls import SASL_AUTHENTICATE, SASL_HANDSHAKE, acl_settings, add_users, client_of
from test_scram import client_final

from coordinator.node.apis.alter_user_scram_credentials import plan
from coordinator.node.apis.describe_user_scram_credentials import describe
from coordinator.testing.server import WireClient, running_server
from coordinator.wire.security.scram import ScramExchange

DESCRIBE, ALTER = 50, 51
NONE, CLUSTER_DENIED, UNSUPPORTED_MECHANISM = 0, 31, 33
NOT_FOUND, DUPLICATE, UNACCEPTABLE = 91, 92, 93
SHA256, SHA512 = 1, 2


def upsert(name: str, mechanism: int = SHA256, iterations: int = 4096) -> ScramCredentialUpsertion:
    salt = b"salt-of-" + name.encode()
    digest = "sha256" if mechanism == SHA256 else "sha512"
    salted = hashlib.pbkdf2_hmac(digest, b"pw-" + name.encode(), salt, max(iterations, 1))
    return ScramCredentialUpsertion(
        name=name,
        mechanism=i8(mechanism),
        iterations=i32(iterations),
        salt=salt,
        salted_password=salted,
    )


def delete(name: str, mechanism: int = SHA256) -> ScramCredentialDeletion:
    return ScramCredentialDeletion(name=name, mechanism=i8(mechanism))


def outcome(
    deletions: list[ScramCredentialDeletion],
    upsertions: list[ScramCredentialUpsertion],
    exists: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> dict[str, int]:
    request = AlterUserScramCredentialsRequest(
        deletions=tuple(deletions), upsertions=tuple(upsertions)
    )
    return {r["user"]: int(r["error_code"]) for r in plan(request, exists).results()}


def test_a_user_is_altered_at_most_once_per_request() -> None:
    exists = {("ann", "SCRAM-SHA-256"), ("ann", "SCRAM-SHA-512")}
    # Two mechanisms of one user are two changes of that user: both refused.
    assert outcome([delete("ann"), delete("ann", SHA512)], [], exists) == {"ann": DUPLICATE}
    assert outcome([delete("ann")], [upsert("ann", SHA512)], exists) == {"ann": DUPLICATE}
    assert outcome([], [upsert("bo"), upsert("bo", SHA512)]) == {"bo": DUPLICATE}
    # A third change of a refused user stays refused; other users are unaffected.
    assert outcome([], [upsert("bo"), upsert("bo"), upsert("bo"), upsert("cy")]) == {
        "cy": NONE,
        "bo": DUPLICATE,
    }


def test_names_mechanisms_iterations_and_missing_credentials() -> None:
    assert outcome([], [upsert("")]) == {"": UNACCEPTABLE}
    assert outcome([], [upsert("ann", mechanism=3)]) == {"ann": UNSUPPORTED_MECHANISM}
    assert outcome([], [upsert("ann", iterations=4095)]) == {"ann": UNACCEPTABLE}
    assert outcome([], [upsert("ann", iterations=16385)]) == {"ann": UNACCEPTABLE}
    assert outcome([], [upsert("ann", iterations=16384)]) == {"ann": NONE}
    assert outcome([delete("ann")], []) == {"ann": NOT_FOUND}
    assert outcome([delete("ann", mechanism=0)], []) == {"ann": UNSUPPORTED_MECHANISM}
    # Answered as Kafka lists them: deletions, then upsertions, then the refusals.
    order = outcome([delete("zed")], [upsert("")], {("zed", "SCRAM-SHA-256")})
    assert list(order) == ["zed", ""]


def test_a_description_lists_mechanisms_and_iterations_never_keys() -> None:
    stored = {"ann": [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)]}
    everyone = describe(None, stored)
    assert everyone == describe([], stored)
    assert everyone[0]["credential_infos"] == [
        {"mechanism": SHA256, "iterations": 4096},
        {"mechanism": SHA512, "iterations": 8192},
    ]
    answers = describe(["nobody", "ann", "ann"], stored)
    assert [(a["user"], int(a["error_code"])) for a in answers] == [
        ("nobody", NOT_FOUND),
        ("ann", DUPLICATE),
    ]


def alteration(**changes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"deletions": changes.get("deletions", []), "upsertions": changes.get("upsertions", [])}


def wire_upsert(name: str, password: str, iterations: int = 8192) -> dict[str, Any]:
    salt = b"0123456789abcdef"
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    return {
        "name": name,
        "mechanism": SHA512,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted,
    }


async def scram_login(client: WireClient, user: str, password: str) -> int:
    """SCRAM-SHA-512 with `password`, as a client computes it; the final error code."""
    handshake = await client.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
    assert handshake.error_code == 0
    first_bare = f"n={user},r=nonce123".encode()
    first = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"n,," + first_bare})
    if first.error_code:
        return int(first.error_code)
    final = client_final(password, "SCRAM-SHA-512", first.auth_bytes, first_bare, "sha512")
    answer = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": final})
    return int(answer.error_code)


async def test_credentials_altered_over_the_wire_authenticate_and_need_the_cluster_permission(
    tmp_path: Path,
) -> None:
    add_users(tmp_path / "data")
    settings = acl_settings("sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512")
    async with running_server(settings=settings, data_dir=tmp_path / "data") as node:
        bob = await client_of(node, "bob")  # no ACL: may neither alter nor describe
        refused = await bob.request(
            ALTER, 0, alteration(upsertions=[wire_upsert("dora", "d0ra")], deletions=[])
        )
        assert [(r.user, r.error_code) for r in refused.results] == [("dora", CLUSTER_DENIED)]
        hidden = await bob.request(DESCRIBE, 0, {"users": [{"name": "alice"}]})
        assert hidden.error_code == CLUSTER_DENIED
        admin = await client_of(node, "admin")  # a super user
        done = await admin.request(
            ALTER,
            0,
            alteration(
                upsertions=[wire_upsert("dora", "d0ra")],
                deletions=[{"name": "bob", "mechanism": SHA256}],
            ),
        )
        assert [(r.user, r.error_code) for r in done.results] == [("bob", NONE), ("dora", NONE)]
        described = await admin.request(DESCRIBE, 0, {"users": None})
        listed = {
            r.user: [(c.mechanism, c.iterations) for c in r.credential_infos]
            for r in described.results
        }
        assert listed == {
            "admin": [(SHA256, 4096)],
            "alice": [(SHA256, 4096)],
            "dora": [(SHA512, 8192)],
        }
        dora = await WireClient.connect(node.host, node.port)
        assert await scram_login(dora, "dora", "wrong") == 58
        await dora.close()
        dora = await WireClient.connect(node.host, node.port)
        assert await scram_login(dora, "dora", "d0ra") == 0
        for client in (admin, bob, dora):
            await client.close()
        again = await WireClient.connect(node.host, node.port)  # bob's only credential is gone
        await again.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        plain = await again.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0bob\0bob-secret"})
        assert plain.error_code == 58
        await again.close()


def test_a_credential_from_a_salted_password_is_the_one_from_the_password() -> None:
    upsertion = upsert("ann", SHA512, 4096)
    request = AlterUserScramCredentialsRequest(deletions=(), upsertions=(upsertion,))
    _, credential = plan(request, set()).upsertions["ann"]
    exchange = ScramExchange("SCRAM-SHA-512", {"ann": credential}.get)
    first = exchange.first(b"n,,n=ann,r=abc")
    exchange.final(client_final("pw-ann", "SCRAM-SHA-512", first, b"n=ann,r=abc", "sha512"))
    assert exchange.user == "ann"
