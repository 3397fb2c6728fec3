"""The TLS side of SSL and SASL_SSL listeners: a server `ssl.SSLContext` from Kafka's settings.

Settings (Kafka's names): `ssl.keystore.location` is a PEM file holding the server's private key
and its certificate chain, `ssl.key.password` the key's password if it is encrypted;
`ssl.truststore.location` a PEM file of the CA certificates client certificates are checked
against (without one, the system's CAs); `ssl.client.auth` `none` (no client certificate asked
for), `requested` (asked for, checked if sent) or `required` (a connection without a trusted one
is refused during the handshake); `ssl.enabled.protocols` the TLS versions offered.

Deliberately different from Kafka: only PEM stores (`ssl.keystore.type`/`ssl.truststore.type`
PEM; Kafka's default is JKS, which Python's ssl module cannot read), and only TLSv1.2 and
TLSv1.3 (OpenSSL 3 refuses older versions at its default security level anyway).

The principal of a TLS connection is built as Kafka's default principal builder does:
`User:` and the client certificate's distinguished name (RFC 2253 order, most specific part
first, e.g. `User:CN=alice,O=example`), or `User:ANONYMOUS` without a client certificate.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Any, Final

from coordinator.errors import OperationalError, UsageError

TLS_VERSIONS: Final = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
CLIENT_AUTH: Final = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
ANONYMOUS: Final = "User:ANONYMOUS"


def parse_protocols(text: str) -> tuple[str, ...]:
    """`ssl.enabled.protocols`: TLS version names; `ValueError` naming an unsupported one.

    Python offers a range of versions (minimum to maximum), so the list must be one: with only
    two supported versions, any non-empty list is."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise ValueError("names no TLS version (use TLSv1.2 and/or TLSv1.3)")
    for name in names:
        if name not in TLS_VERSIONS:
            raise ValueError(f"{name} is not supported (TLSv1.2 and TLSv1.3 are)")
    return names


def server_context(
    *,
    keystore: str | None,
    key_password: str | None,
    truststore: str | None,
    client_auth: str,
    protocols: Sequence[str],
) -> ssl.SSLContext:
    """A server context; `OperationalError` with one line if a store cannot be used."""
    if keystore is None:
        raise UsageError(
            "an SSL or SASL_SSL listener needs ssl.keystore.location (a PEM file with the "
            "server's private key and certificate chain)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = [TLS_VERSIONS[name] for name in protocols]
    context.minimum_version, context.maximum_version = min(versions), max(versions)

    def no_password() -> bytes:
        # Called by OpenSSL only for an encrypted key: without this it would prompt on the tty.
        raise OperationalError(
            f"the private key in {keystore} is encrypted: give its password as ssl.key.password"
        )

    try:
        context.load_cert_chain(keystore, password=key_password or no_password)
    except ssl.SSLError:
        hint = " and ssl.key.password the key's password" if key_password else ""
        raise OperationalError(
            f"cannot use {keystore} (ssl.keystore.location): it must hold the server's PEM "
            f"private key and certificate chain{hint}"
        ) from None
    except OSError as exc:
        raise OperationalError(_store_problem("ssl.keystore.location", keystore, exc)) from None
    if truststore is not None:
        try:
            context.load_verify_locations(cafile=truststore)
        except OSError as exc:
            raise OperationalError(
                _store_problem("ssl.truststore.location", truststore, exc)
            ) from None
    elif client_auth != "none":
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    context.verify_mode = CLIENT_AUTH[client_auth]
    return context


def _store_problem(setting: str, path: str, exc: OSError) -> str:
    if isinstance(exc, ssl.SSLError):
        return f"cannot use {path} ({setting}): not a PEM file of certificates ({exc.reason})"
    return f"cannot read {path} ({setting}): {exc.strerror or exc}"


def tls_principal(peer_certificate: dict[str, Any] | None) -> str:
    """`User:<distinguished name>` of a verified client certificate; `User:ANONYMOUS` without."""
    if not peer_certificate or not peer_certificate.get("subject"):
        return ANONYMOUS
    parts = []
    for rdn in reversed(peer_certificate["subject"]):  # RFC 2253: most specific first
        parts.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    return "User:" + ",".join(parts)


_SHORT: Final = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "domainComponent": "DC",
    "streetAddress": "STREET",
    "userId": "UID",
}


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped
