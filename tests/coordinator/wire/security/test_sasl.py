"""SASL on the wire, request by request (this project's `WireClient`; the three client libraries
are in test_sasl_interop.py): what is answered before authentication, the handshake, PLAIN,
failures (answered, closed, logged once per source), KIP-368 re-authentication and session
expiry, credentials changed while the server runs, and `rebalance users`.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.cli.main import main as rebalance
from coordinator.node.config import ConfigError, parse_settings
from coordinator.testing.server import RunningServer, WireClient, running_server
from coordinator.wire.security.credentials import CredentialStore
from coordinator.wire.security.sasl import FailureLog

API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36
NONE, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 0, 33, 34, 58
PLAIN_FAILED = "Authentication failed: Invalid username or password"


async def sasl_node(tmp_path: Path, *settings: str) -> Any:
    data_dir = tmp_path / "data"
    data_dir.mkdir(exist_ok=True)
    store = CredentialStore(data_dir)
    store.add("alice", "alice-secret")
    store.add("bob", "bob-secret", ["SCRAM-SHA-512"])
    store.close()
    return running_server(
        data_dir=data_dir,
        settings=[
            "listeners=SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
            "connection.failed.authentication.delay.ms=20",
            *settings,
        ],
    )


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with await sasl_node(tmp_path) as server:
        yield server


async def connect(server: RunningServer, listener: str = "SASL_PLAINTEXT") -> WireClient:
    host, _, port = server.bootstrap_of(listener).rpartition(":")
    return await WireClient.connect(host, int(port))


async def login(
    client: WireClient, user: str, password: str, *, version: int = 2, mechanism: str = "PLAIN"
) -> Any:
    handshake = await client.request(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    assert handshake.error_code == NONE
    token = b"\0" + user.encode() + b"\0" + password.encode()
    return await client.request(SASL_AUTHENTICATE, version, {"auth_bytes": token})


async def closed(client: WireClient) -> bool:
    """True once the server has closed the connection (EOF within a second)."""
    try:
        await asyncio.wait_for(client.reader.read(1), 1)
    except (TimeoutError, ConnectionError):
        return False
    return client.reader.at_eof()


async def test_before_authentication_only_the_sasl_apis_are_answered(
    node: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    client = await connect(node)
    assert (await client.request(API_VERSIONS, 3, {})).error_code == NONE
    await client.send(client.encode(METADATA, 12, {"topics": []}))
    assert await closed(client)
    assert "api_key 3 before SASL authentication" in caplog.text
    await client.close()


async def test_the_handshake_names_the_enabled_mechanisms(node: RunningServer) -> None:
    client = await connect(node)
    answer = await client.request(SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert answer.error_code == UNSUPPORTED_SASL_MECHANISM
    assert list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]
    answer = await client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert answer.error_code == NONE
    await client.close()
    plain = await connect(node, "PLAINTEXT")  # a listener without SASL, as Kafka answers it
    answer = await plain.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert (answer.error_code, list(answer.mechanisms)) == (ILLEGAL_SASL_STATE, [])
    await plain.close()


async def test_plain_lets_a_user_in_with_its_principal(node: RunningServer) -> None:
    client = await connect(node)
    answer = await login(client, "alice", "alice-secret")
    assert (answer.error_code, answer.session_lifetime.total_seconds()) == (NONE, 0)
    metadata = await client.request(METADATA, 12, {"topics": []})
    assert metadata.brokers[0].port == int(node.bootstrap_of("SASL_PLAINTEXT").split(":")[1])
    assert node.app.server is not None
    (conn,) = node.app.server._connections
    assert conn.session is not None and conn.session.principal == "User:alice"
    await client.close()


async def test_a_wrong_password_is_answered_then_the_connection_closed(
    node: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="coordinator.wire.sasl")
    for attempt in range(3):
        client = await connect(node)
        answer = await login(client, "alice", f"guess-{attempt}", version=1)
        assert (answer.error_code, answer.error_message) == (SASL_AUTHENTICATION_FAILED,
                                                             PLAIN_FAILED)  # fmt: skip
        assert await closed(client)
        await client.close()
    failures = [r for r in caplog.records if r.name == "coordinator.wire.sasl"]
    assert len(failures) == 1  # once per source and window
    assert "authentication failed from 127.0.0.1 (User:alice, PLAIN)" in failures[0].getMessage()


async def test_authenticate_before_a_handshake_is_an_illegal_state(node: RunningServer) -> None:
    client = await connect(node)
    answer = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert answer.error_code == ILLEGAL_SASL_STATE
    assert await closed(client)
    await client.close()


def test_failures_are_logged_once_per_source_and_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    log = FailureLog(window=60, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="coordinator.wire.sasl")
    logged = [log.failed("10.0.0.1", "User:a", "PLAIN", "wrong password") for _ in range(5)]
    assert logged == [True, False, False, False, False]
    assert log.failed("10.0.0.2", "User:a", "PLAIN", "wrong password")  # another source
    now[0] = 61
    assert log.failed("10.0.0.1", "User:a", "PLAIN", "wrong password")
    assert "(4 more failures from there not logged)" in caplog.records[-1].getMessage()


async def test_a_session_ends_unless_the_client_reauthenticates(tmp_path: Path) -> None:
    async with await sasl_node(tmp_path, "connections.max.reauth.ms=600") as server:
        client = await connect(server)
        answer = await login(client, "alice", "alice-secret", version=1)
        assert answer.session_lifetime.total_seconds() == 0.6  # told to the client (KIP-368)
        await asyncio.sleep(0.35)
        again = await login(client, "alice", "alice-secret")  # same connection: a new session
        assert again.error_code == NONE
        await asyncio.sleep(0.35)  # past the first session's end, inside the second
        assert (await client.request(METADATA, 12, {"topics": []})).brokers
        await asyncio.sleep(0.4)
        await client.send(client.encode(METADATA, 12, {"topics": []}))
        assert await closed(client)  # the session ended: the next request closes it
        await client.close()

        client = await connect(server)
        await login(client, "alice", "alice-secret")
        other = await login(client, "bob", "bob-secret")  # PLAIN checks bob's SCRAM-SHA-512
        assert (other.error_code, other.error_message) == (
            SASL_AUTHENTICATION_FAILED, "Cannot change principals during re-authentication"
        )  # fmt: skip
        assert await closed(client)
        await client.close()
        client = await connect(server)
        await login(client, "alice", "alice-secret")
        switch = await client.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
        assert switch.error_code == ILLEGAL_SASL_STATE  # a re-authentication keeps its mechanism
        await client.close()


async def test_credentials_changed_while_serving_apply_at_the_next_login(
    node: RunningServer,
) -> None:
    store = CredentialStore(node.data_dir)
    store.add("carol", "carol-secret")
    client = await connect(node)
    assert (await login(client, "carol", "carol-secret")).error_code == NONE
    await client.close()
    store.remove("carol")
    store.close()
    client = await connect(node)
    assert (await login(client, "carol", "carol-secret")).error_code == SASL_AUTHENTICATION_FAILED
    await client.close()


def test_rebalance_users_adds_lists_and_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = str(tmp_path / "data")
    assert rebalance(["users", "add", "alice", "--data-dir", data, "--password", "pw"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("from-stdin\n"))
    assert rebalance(["users", "add", "bob", "--data-dir", data,
                      "--mechanism", "SCRAM-SHA-512", "--iterations", "8192"]) == 0  # fmt: skip
    assert rebalance(["users", "list", "--data-dir", data]) == 0
    assert rebalance(["users", "remove", "alice", "--data-dir", data]) == 0
    assert rebalance(["users", "remove", "alice", "--data-dir", data]) == 1
    assert rebalance(["users", "add", "x", "--data-dir", data, "--password", "p",
                      "--iterations", "10"]) == 2  # fmt: skip
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "user alice: SCRAM-SHA-256, SCRAM-SHA-512 (4096 iterations)",
        "user bob: SCRAM-SHA-512 (8192 iterations)",
        "alice: SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=4096",
        "bob: SCRAM-SHA-512=iterations=8192",
        "user alice: removed SCRAM-SHA-256, SCRAM-SHA-512",
    ]
    assert err.splitlines() == [
        "rebalance users: user alice has no SCRAM-SHA-256 or SCRAM-SHA-512 credentials",
        "rebalance users: --iterations must be at least 4096",
    ]
    store = CredentialStore(tmp_path / "data")
    credential = store.credential("bob", "SCRAM-SHA-512")
    store.close()
    assert credential is not None and credential.iterations == 8192


def test_an_unknown_mechanism_is_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match=r"sasl\.enabled\.mechanisms: GSSAPI is not"):
        parse_settings(["sasl.enabled.mechanisms=PLAIN,GSSAPI"])
