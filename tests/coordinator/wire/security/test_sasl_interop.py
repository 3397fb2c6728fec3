"""aiokafka, kafka-python and confluent-kafka (librdkafka), unmodified, over SASL_PLAINTEXT and
SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: each consumer authenticates, joins a
group, reads every record, commits and reads the commit back; each one's admin client lists the
topics (SCRAM-SHA-256); each is refused with a wrong password (SASL_AUTHENTICATION_FAILED,
error 58, which every library reports). One server for the module (PLAINTEXT, SASL_PLAINTEXT
and SASL_SSL listeners); users added with the credential store as `rebalance users add` does;
certificates made by the suite (`coordinator.testing.certificates`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from clients import (
    LIBRARIES,
    Security,
    admin_topics,
    confluent_options,
    consume_and_commit,
    refused,
    seed,
)

from coordinator.testing.certificates import Pki, make_pki
from coordinator.testing.server import RunningServer, server_in_thread
from coordinator.wire.security.credentials import CredentialStore

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

TOPIC = "secure"
PARTITIONS = 3
PER_PARTITION = 2
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
PASSWORD = "alice-secret"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def node(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    data_dir = tmp_path_factory.mktemp("sasl") / "data"
    data_dir.mkdir()
    store = CredentialStore(data_dir)
    store.add("alice", PASSWORD)
    store.close()
    settings = [
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        f"ssl.keystore.location={pki.server_keystore}",
        "group.initial.rebalance.delay.ms=0",
    ]
    with server_in_thread(
        topics=[(TOPIC, PARTITIONS)], settings=settings, data_dir=data_dir
    ) as server:
        seed(server.bootstrap_of("PLAINTEXT"), TOPIC, PARTITIONS, PER_PARTITION)
        yield server


def security(protocol: str, mechanism: str, pki: Pki, password: str = PASSWORD) -> Security:
    cafile = pki.ca if protocol == "SASL_SSL" else None
    return Security(protocol, cafile, mechanism=mechanism, username="alice", password=password)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("lib", LIBRARIES)
def test_an_authenticated_consumer_forms_a_group_and_commits(
    node: RunningServer, pki: Pki, lib: str, protocol: str, mechanism: str
) -> None:
    read, committed = consume_and_commit(
        lib, node.bootstrap_of(protocol), security(protocol, mechanism, pki),
        topic=TOPIC, group=f"{lib}-{protocol}-{mechanism}", count=PARTITIONS * PER_PARTITION,
    )  # fmt: skip
    assert read == PARTITIONS * PER_PARTITION
    assert committed == {p: PER_PARTITION for p in range(PARTITIONS)}


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_wrong_password_is_refused(
    node: RunningServer, pki: Pki, lib: str, mechanism: str
) -> None:
    wrong = security("SASL_SSL", mechanism, pki, password="guess")
    error = refused(lib, node.bootstrap_of("SASL_SSL"), wrong)
    assert error is not None
    assert (
        "SaslAuthenticationFailed" if lib != "confluent" else "SASL authentication error"
    ) in error
    expected = (
        "Invalid username or password" if mechanism == "PLAIN"
        else f"invalid credentials with SASL mechanism {mechanism}"
    )  # fmt: skip
    assert expected in error


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("lib", LIBRARIES)
def test_an_authenticated_admin_client_lists_topics(
    node: RunningServer, pki: Pki, lib: str, protocol: str
) -> None:
    security_of = security(protocol, "SCRAM-SHA-256", pki)
    assert TOPIC in admin_topics(lib, node.bootstrap_of(protocol), security_of)


def test_confluent_admin_manages_scram_users_that_then_log_in(
    node: RunningServer, pki: Pki
) -> None:
    """librdkafka's AlterUserScramCredentials sends a SaltedPassword it computed; the user can
    log in with it at once, is described with its mechanism and iterations, and is refused
    again once its credential is deleted."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    bootstrap = node.bootstrap_of("SASL_PLAINTEXT")
    alice = security("SASL_PLAINTEXT", "SCRAM-SHA-256", pki)
    admin = AdminClient({"bootstrap.servers": bootstrap, **confluent_options(alice)})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    upsert = UserScramCredentialUpsertion("erin", info, b"erin-secret")
    for done in admin.alter_user_scram_credentials([upsert], request_timeout=10).values():
        done.result()
    erin = Security(
        "SASL_PLAINTEXT", mechanism="SCRAM-SHA-512", username="erin", password="erin-secret"
    )
    assert TOPIC in admin_topics("confluent", bootstrap, erin)
    described = admin.describe_user_scram_credentials(["erin"], request_timeout=10)
    credentials = described["erin"].result().scram_credential_infos
    assert [(c.mechanism, c.iterations) for c in credentials] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)
    ]
    deletion = UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_512)
    for done in admin.alter_user_scram_credentials([deletion], request_timeout=10).values():
        done.result()
    assert refused("confluent", bootstrap, erin) is not None
