"""SCRAM-SHA-256/512 on the server side (RFC 5802, RFC 7677): the RFC 7677 example exchange
byte for byte, and every way a client-final or client-first can be refused."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from coordinator.wire.security.scram import (
    ScramCredential,
    ScramError,
    ScramExchange,
    password_matches,
    salted_credential,
)

# RFC 7677 section 3: user "user", password "pencil".
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def pencil() -> ScramCredential:
    return salted_credential("SCRAM-SHA-256", "pencil", salt=SALT)


def exchange(users: dict[str, ScramCredential] | None = None) -> ScramExchange:
    known = {"user": pencil()} if users is None else users
    return ScramExchange("SCRAM-SHA-256", known.get, server_nonce=lambda: SERVER_NONCE)


def test_the_rfc_7677_example_exchange() -> None:
    scram = exchange()
    assert scram.first(CLIENT_FIRST) == SERVER_FIRST
    assert scram.final(CLIENT_FINAL) == SERVER_FINAL
    assert scram.user == "user"


def test_a_stored_credential_is_not_the_password_and_checks_it() -> None:
    credential = pencil()
    assert b"pencil" not in credential.stored_key + credential.server_key
    assert password_matches("SCRAM-SHA-256", credential, "pencil")
    assert not password_matches("SCRAM-SHA-256", credential, "pencil2")
    fresh = salted_credential("SCRAM-SHA-512", "pencil")
    assert len(fresh.salt) == 32 and len(fresh.stored_key) == 64 and fresh.iterations == 4096
    assert fresh.salt != salted_credential("SCRAM-SHA-512", "pencil").salt


def client_final(password: str, mechanism: str, server_first: bytes, client_first_bare: bytes,
                 digest: str) -> bytes:  # fmt: skip
    """A client's final message computed from RFC 5802's formulas (SHA-512 has no RFC example)."""
    fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(fields["s"]),
                                 int(fields["i"]))  # fmt: skip
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}".encode()
    auth = client_first_bare + b"," + server_first + b"," + without_proof
    signature = hmac.digest(stored_key, auth, digest)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return without_proof + b",p=" + base64.b64encode(proof)


def test_scram_sha_512_round_trip_and_a_wrong_password() -> None:
    users = {"alice": salted_credential("SCRAM-SHA-512", "s3cret")}
    for password, accepted in (("s3cret", True), ("guess", False)):
        scram = ScramExchange("SCRAM-SHA-512", users.get)
        server_first = scram.first(b"n,,n=alice,r=abc123")
        final = client_final(password, "SCRAM-SHA-512", server_first, b"n=alice,r=abc123",
                             "sha512")  # fmt: skip
        if accepted:
            assert scram.final(final).startswith(b"v=")
        else:
            with pytest.raises(ScramError, match="wrong password for user 'alice'"):
                scram.final(final)


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (b"n,,n=nobody,r=x", "no SCRAM-SHA-256 credential for user 'nobody'"),
        (b"y,,n=user,r=x", "channel binding is not supported"),
        (b"p=tls-unique,,n=user,r=x", "channel binding is not supported"),
        (b"n,a=admin,n=user,r=x", "authorization id 'a=admin' is not the user 'user'"),
        (b"n,,n=user,r=x,t=1", "extensions are not supported"),
        (b"n=user,r=x", "without a GS2 header"),
        (b"n,,r=x", "without a user name or nonce"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_client_first_message_is_refused(first: bytes, why: str) -> None:
    with pytest.raises(ScramError, match=why.replace("(", r"\(")):
        exchange().first(first)


def test_an_authorization_id_naming_the_user_itself_is_accepted() -> None:
    assert exchange().first(b"n,a=user,n=user,r=rOprNGfwEbeRWgbNEkqO") == SERVER_FIRST


@pytest.mark.parametrize(
    ("final", "why"),
    [
        (CLIENT_FINAL.replace(b"r=rOpr", b"r=XOpr"), "nonce mismatch"),
        (CLIENT_FINAL.replace(b"c=biws", b"c=eSws"), "channel binding"),
        (CLIENT_FINAL[: CLIENT_FINAL.index(b",p=")], "without a proof"),
        (CLIENT_FINAL.replace(b"p=dHzb", b"p=AHzb"), "wrong password"),
        (CLIENT_FINAL[:-8] + b"AAAA", "wrong length|not base64"),
    ],
)
def test_a_client_final_message_is_refused(final: bytes, why: str) -> None:
    scram = exchange()
    scram.first(CLIENT_FIRST)
    with pytest.raises(ScramError, match=why):
        scram.final(final)


def test_final_before_first_is_refused() -> None:
    with pytest.raises(ScramError, match="before client-first"):
        exchange().final(CLIENT_FINAL)


def test_user_names_are_unescaped() -> None:
    users = {"a,b=c": pencil()}
    scram = ScramExchange("SCRAM-SHA-256", users.get)
    scram.first(b"n,,n=a=2Cb=3Dc,r=x")
    assert scram.user == "a,b=c"
