"""Certificates for tests and benchmarks of TLS listeners, made with the `openssl` command line
tool (no Python dependency; `openssl` must be on PATH).

`make_pki(directory)` writes a CA, a server certificate for `localhost`/127.0.0.1 signed by it
(as a PEM keystore: private key and certificate in one file, as `ssl.keystore.location` wants
it, and once more with the key encrypted under `KEY_PASSWORD`), a client certificate for
`CN=alice,O=rebalance-tests` signed by the same CA, and a client certificate signed by a second,
untrusted CA. EC P-256 keys: each takes milliseconds to make.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

KEY_PASSWORD = "keystore-secret"
CLIENT_DN = "CN=alice,O=rebalance-tests"


@dataclass(frozen=True)
class Pki:
    ca: Path
    """The trusted CA certificate (the server's truststore, the clients' CA file)."""
    server_keystore: Path
    """Server private key + certificate (PEM)."""
    server_keystore_encrypted: Path
    """The same with the key encrypted under KEY_PASSWORD."""
    client_cert: Path
    client_key: Path
    rogue_cert: Path
    """A client certificate signed by a CA the server does not trust."""
    rogue_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key.name, "-out", cert.name, "-days", "2", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )  # fmt: skip
    return cert, key


def _signed(
    directory: Path, name: str, subject: str, ca: tuple[Path, Path], extensions: str
) -> tuple[Path, Path]:
    key, cert, csr, ext = (directory / f"{name}{s}" for s in (".key", ".pem", ".csr", ".ext"))
    ext.write_text(extensions + "\n")
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key.name, "-out", csr.name, "-subj", subject, cwd=directory,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr.name, "-CA", str(ca[0]), "-CAkey", str(ca[1]),
        "-set_serial", str(abs(hash(name)) % 10**9), "-days", "2", "-out", cert.name,
        "-extfile", ext.name, cwd=directory,
    )  # fmt: skip
    return cert, key


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "test-ca")
    rogue_ca = _ca(directory, "rogue-ca")
    server_cert, server_key = _signed(
        directory, "server", "/CN=localhost", ca,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth",
    )  # fmt: skip
    keystore = directory / "server-keystore.pem"
    keystore.write_text(server_key.read_text() + server_cert.read_text())
    encrypted_key = directory / "server-encrypted.key"
    _openssl(
        "pkey", "-in", server_key.name, "-aes256", "-passout", f"pass:{KEY_PASSWORD}",
        "-out", encrypted_key.name, cwd=directory,
    )  # fmt: skip
    encrypted = directory / "server-keystore-encrypted.pem"
    encrypted.write_text(encrypted_key.read_text() + server_cert.read_text())
    client_cert, client_key = _signed(
        directory, "alice", "/O=rebalance-tests/CN=alice", ca, "extendedKeyUsage=clientAuth"
    )
    rogue_cert, rogue_key = _signed(
        directory, "mallory", "/CN=mallory", rogue_ca, "extendedKeyUsage=clientAuth"
    )
    return Pki(ca[0], keystore, encrypted, client_cert, client_key, rogue_cert, rogue_key)
