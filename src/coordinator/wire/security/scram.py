"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): salted credentials and the server side
of the exchange, without I/O.

A stored credential is what RFC 5802 has the server keep: the salt, the iteration count,
StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword,
"Server Key"), where SaltedPassword = PBKDF2(password, salt, iterations). The password itself
is never stored, and a stolen credential cannot be replayed as a client proof.

`ScramExchange` answers the client's two messages: the client-first (`n,,n=user,r=nonce`) with
the server-first (`r=nonce+server nonce,s=salt,i=iterations`), the client-final
(`c=biws,r=nonce,p=proof`) with the server-final (`v=server signature`) once the proof checks
out. Like Kafka: passwords are UTF-8 without SASLprep, channel binding is refused, an
authorization id must be the user itself, extensions (`tokenauth`...) are not accepted, and an
unknown user fails at the first message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

MECHANISMS: Final = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS: Final = 4096
"""Kafka's minimum for both mechanisms (and its default)."""
MAX_ITERATIONS: Final = 16384
"""Kafka's maximum for a credential set through AlterUserScramCredentials."""
MECHANISM_CODES: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""The mechanisms' codes in the SCRAM credential APIs (Kafka's `ScramMechanism`; 0 is unknown)."""


class ScramError(Exception):
    """The exchange failed; the message says why (for the server's log, not the client)."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server stores for one user and mechanism (RFC 5802 section 3)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def salted_credential(
    mechanism: str, password: str, *, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A new credential for `password` (a random 32-byte salt unless one is given)."""
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"{mechanism} needs at least {MIN_ITERATIONS} iterations")
    salt = os.urandom(32) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)
    return credential_of_salted(mechanism, salted, salt, iterations)


def credential_of_salted(
    mechanism: str, salted_password: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """The credential of a SaltedPassword a client computed itself (AlterUserScramCredentials
    sends it, so that the password never reaches the server)."""
    digest = MECHANISMS[mechanism]
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    return ScramCredential(
        salt,
        hashlib.new(digest, client_key).digest(),
        hmac.digest(salted_password, b"Server Key", digest),
        iterations,
    )


def password_matches(mechanism: str, credential: ScramCredential, password: str) -> bool:
    """Whether `password` is the one `credential` was made from (for SASL/PLAIN)."""
    candidate = salted_credential(
        mechanism, password, iterations=credential.iterations, salt=credential.salt
    )
    return hmac.compare_digest(candidate.stored_key, credential.stored_key)


CredentialLookup = Callable[[str], ScramCredential | None]
"""user name -> that user's credential for the exchange's mechanism, None if there is none."""


class ScramExchange:
    """The server side of one SCRAM authentication: `first`, then `final`."""

    def __init__(
        self,
        mechanism: str,
        lookup: CredentialLookup,
        *,
        server_nonce: Callable[[], str] = lambda: base64.b64encode(os.urandom(18)).decode(),
    ) -> None:
        self.mechanism = mechanism
        self._server_nonce = server_nonce
        self._digest = MECHANISMS[mechanism]
        self._lookup = lookup
        self.user: str | None = None
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    def first(self, message: bytes) -> bytes:
        """client-first-message -> server-first-message."""
        text = _text(message)
        gs2, _, bare = _split_gs2(text)
        fields = _attributes(bare)
        if gs2[0] != "n":
            raise ScramError("channel binding is not supported")
        name = _unescape_name(fields.get("n", ""))
        authzid = gs2[1]
        if authzid and _unescape_name(authzid.removeprefix("a=")) != name:
            raise ScramError(f"authorization id {authzid!r} is not the user {name!r}")
        client_nonce = fields.get("r", "")
        if not name or not client_nonce:
            raise ScramError("client-first-message without a user name or nonce")
        if set(fields) - {"n", "r"}:
            raise ScramError(f"extensions are not supported: {sorted(set(fields) - {'n', 'r'})}")
        credential = self._lookup(name)
        if credential is None:
            raise ScramError(f"no {self.mechanism} credential for user {name!r}")
        self.user, self._credential = name, credential
        self._nonce = client_nonce + self._server_nonce()
        self._client_first_bare = bare
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        """client-final-message -> server-final-message; `ScramError` if the proof is wrong."""
        if self._credential is None:
            raise ScramError("client-final-message before client-first-message")
        text = _text(message)
        without_proof, sep, proof_field = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final-message without a proof")
        fields = _attributes(without_proof)
        if fields.get("r") != self._nonce:
            raise ScramError("nonce mismatch")
        binding = base64.b64decode(fields.get("c", ""), validate=True)
        if not binding.startswith(b"n,"):
            raise ScramError("channel binding is not supported")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        credential = self._credential
        signature = hmac.digest(credential.stored_key, auth_message, self._digest)
        try:
            proof = base64.b64decode(proof_field, validate=True)
        except ValueError:
            raise ScramError("client proof is not base64") from None
        if len(proof) != len(signature):
            raise ScramError("client proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(self._digest, client_key).digest(), credential.stored_key
        ):
            raise ScramError(f"wrong password for user {self.user!r}")
        server_signature = hmac.digest(credential.server_key, auth_message, self._digest)
        return b"v=" + base64.b64encode(server_signature)


def _text(message: bytes) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise ScramError("message is not UTF-8") from None


def _split_gs2(text: str) -> tuple[tuple[str, str], str, str]:
    """`n,[a=authzid],client-first-bare` -> ((flag, authzid), header, bare)."""
    parts = text.split(",", 2)
    if len(parts) != 3 or (parts[0] not in ("n", "y") and not parts[0].startswith("p=")):
        raise ScramError("client-first-message without a GS2 header")
    return (parts[0][0], parts[1]), f"{parts[0]},{parts[1]},", parts[2]


def _attributes(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError(f"malformed attribute {part!r}")
        found[key] = value
    return found


def _unescape_name(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("malformed user name")
    return name.replace("=2C", ",").replace("=3D", "=")
