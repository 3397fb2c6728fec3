"""Listeners with Kafka's settings: several at once, each advertising its own address, TLS with
PEM stores and client authentication, and a one-line error for every setting that cannot work.

Certificates are made by the suite (`coordinator.testing.certificates`); clients here are this
project's `WireClient` over Python's ssl module (the real client libraries are in
test_tls_interop.py).
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest

from coordinator.errors import OperationalError, UsageError
from coordinator.node.config import ConfigError, parse_settings
from coordinator.testing.certificates import CLIENT_DN, KEY_PASSWORD, Pki, make_pki
from coordinator.testing.server import RunningServer, WireClient, running_server

API_VERSIONS, METADATA, FIND_COORDINATOR, DESCRIBE_CONFIGS = 18, 3, 10, 32


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls_settings(pki: Pki, client_auth: str = "required") -> list[str]:
    return [
        f"ssl.keystore.location={pki.server_keystore_encrypted}",
        f"ssl.key.password={KEY_PASSWORD}",
        f"ssl.truststore.location={pki.ca}",
        f"ssl.client.auth={client_auth}",
    ]


def client_tls(pki: Pki, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def address(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.rpartition(":")
    return host, int(port)


async def told_address(bootstrap: str, tls: ssl.SSLContext | None = None) -> dict[str, Any]:
    """What Metadata, FindCoordinator and DescribeConfigs tell a client of this listener."""
    client = await WireClient.connect(*address(bootstrap), tls=tls)
    try:
        metadata = await client.request(METADATA, 12, {"topics": []})
        found = await client.request(FIND_COORDINATOR, 1, {"key": "g", "key_type": 0})
        configs = await client.request(
            DESCRIBE_CONFIGS, 1,
            {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}]},
        )  # fmt: skip
    finally:
        await client.close()
    (broker,) = metadata.brokers
    shown = {c.name: c.value for c in configs.results[0].configs}
    return {
        "metadata": (broker.host, broker.port),
        "coordinator": (found.host, found.port),
        "listeners": shown["listeners"],
        "password": shown["ssl.key.password"],
    }


async def test_each_listener_advertises_its_own_address(pki: Pki) -> None:
    settings = [
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map=INTERNAL:PLAINTEXT",
        "advertised.listeners=SSL://localhost:0,INTERNAL://internal.example:19092",
        *tls_settings(pki, "none"),
    ]
    async with running_server(settings=settings) as server:
        plain, tls, internal = (server.bootstrap_of(n) for n in ("PLAINTEXT", "SSL", "INTERNAL"))
        assert server.bootstrap == plain  # the first listener is the node's main address
        on_plain = await told_address(plain)
        on_tls = await told_address(tls, client_tls(pki))
        on_internal = await told_address(internal)
    assert on_plain["metadata"] == on_plain["coordinator"] == address(plain)
    assert on_tls["metadata"] == on_tls["coordinator"] == ("localhost", address(tls)[1])
    assert on_internal["metadata"] == on_internal["coordinator"] == ("internal.example", 19092)
    assert on_plain["listeners"] == f"PLAINTEXT://{plain},SSL://{tls},INTERNAL://{internal}"
    assert on_plain["password"] is None  # never shown


async def ssl_server(pki: Pki, client_auth: str, *extra: str) -> Any:
    return running_server(
        settings=["listeners=SSL://127.0.0.1:0", *tls_settings(pki, client_auth), *extra]
    )


async def api_versions_over(server: RunningServer, tls: ssl.SSLContext) -> int:
    client = await WireClient.connect(server.host, server.port, tls=tls)
    try:
        return int((await client.request(API_VERSIONS, 3, {})).error_code)
    finally:
        await client.close()


async def refused(server: RunningServer, tls: ssl.SSLContext) -> bool:
    """True if the server ends the connection during or right after the TLS handshake (with
    TLSv1.3 a client learns of a refused certificate only on its first read)."""
    try:
        await asyncio.wait_for(api_versions_over(server, tls), 10)
    except (ssl.SSLError, ConnectionError, asyncio.IncompleteReadError):
        return True
    return False


async def test_required_client_auth_takes_a_trusted_certificate_and_names_the_principal(
    pki: Pki,
) -> None:
    alice = client_tls(pki, pki.client_cert, pki.client_key)
    async with await ssl_server(pki, "required") as server:
        assert await api_versions_over(server, alice) == 0
        assert await refused(server, client_tls(pki, pki.rogue_cert, pki.rogue_key))
        assert await refused(server, client_tls(pki))  # no certificate at all
        assert await principal_of_a_connection(server, alice) == f"User:{CLIENT_DN}"


async def principal_of_a_connection(server: RunningServer, tls: ssl.SSLContext) -> str:
    client = await WireClient.connect(server.host, server.port, tls=tls)
    try:
        await client.request(API_VERSIONS, 3, {})
        assert server.app.server is not None
        (conn,) = server.app.server._connections
        assert conn.session is not None
        return conn.session.principal
    finally:
        await client.close()


async def test_requested_client_auth_serves_clients_without_a_certificate(pki: Pki) -> None:
    async with await ssl_server(pki, "requested") as server:
        assert await api_versions_over(server, client_tls(pki)) == 0
        assert await principal_of_a_connection(server, client_tls(pki)) == "User:ANONYMOUS"
        assert await refused(server, client_tls(pki, pki.rogue_cert, pki.rogue_key))


async def test_enabled_protocols_refuse_other_tls_versions(pki: Pki) -> None:
    async with await ssl_server(pki, "none", "ssl.enabled.protocols=TLSv1.3") as server:
        old = client_tls(pki)
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        assert await refused(server, old)
        assert await api_versions_over(server, client_tls(pki)) == 0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["listeners=SSL//127.0.0.1:0"], "'SSL//127.0.0.1:0' is not NAME://HOST:PORT"),
        (["listeners=A://127.0.0.1:1,A://127.0.0.1:2"], "listener name A appears more than once"),
        (["ssl.client.auth=maybe"], "ssl.client.auth"),
        (["ssl.enabled.protocols=TLSv1.1"], "TLSv1.1 is not supported (TLSv1.2 and TLSv1.3 are)"),
        (["listener.security.protocol.map=X:TLS"], "security protocol TLS is not one of"),
        (["ssl.keystore.type=JKS"], "ssl.keystore.type"),
    ],
)
def test_bad_listener_settings_are_one_line_errors(settings: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^bad value for ") as caught:
        parse_settings(settings)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        (["listeners=EXTERNAL://127.0.0.1:0"], UsageError,
         "listener EXTERNAL has no security protocol: add EXTERNAL:PROTOCOL to "
         "listener.security.protocol.map"),
        (["listeners=PLAINTEXT://127.0.0.1:0", "advertised.listeners=SSL://h:1"], UsageError,
         "advertised.listeners names SSL, which is not in listeners (PLAINTEXT)"),
        (["listeners=PLAINTEXT://127.0.0.1:0", "advertised.listeners=PLAINTEXT://0.0.0.0:1"],
         UsageError, "is not an address clients can connect to"),
        (["listeners=SSL://127.0.0.1:0"], UsageError, "an SSL or SASL_SSL listener needs "
         "ssl.keystore.location"),
        (["listeners=SSL://127.0.0.1:0", "ssl.keystore.location=/no/such.pem"], OperationalError,
         "cannot read /no/such.pem (ssl.keystore.location): No such file or directory"),
        (["listeners=SSL://127.0.0.1:0", "ssl.keystore.location={encrypted}"], OperationalError,
         "is encrypted: give its password as ssl.key.password"),
        (["listeners=SSL://127.0.0.1:0", "ssl.keystore.location={encrypted}",
          "ssl.key.password=wrong"], OperationalError,
         "must hold the server's PEM private key and certificate chain and ssl.key.password"),
        (["listeners=SSL://127.0.0.1:0", "ssl.keystore.location={plain}",
          "ssl.truststore.location={plain_key}"], OperationalError,
         "(ssl.truststore.location): not a PEM file of certificates"),
    ],
)  # fmt: skip
async def test_listeners_that_cannot_open_stop_the_start_with_one_line(
    pki: Pki, tmp_path: Path, settings: list[str], error: type[Exception], message: str
) -> None:
    files = {
        "encrypted": pki.server_keystore_encrypted,
        "plain": pki.server_keystore,
        "plain_key": pki.client_key,
    }
    data_dir = tmp_path / "data"
    given = [s.format(**files) for s in settings]
    with pytest.raises(error) as caught:
        async with running_server(settings=given, data_dir=data_dir):
            pass
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not data_dir.exists()  # nothing left behind
