"""Connection limits as Kafka names them: `max.connections.per.ip` (and its overrides) closes a
connection over its address's limit at once; `max.connections` makes new clients wait until a
connection closes. 127.0.0.2 is loopback too on Linux: connecting from it is another address."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from coordinator.node.config import ConfigError, parse_settings
from coordinator.testing.server import RunningServer, running_server
from coordinator.wire.client import WireClient
from coordinator.wire.transport.connection_quotas import ConnectionQuotas, parse_overrides

API_VERSIONS = 18


def test_quotas_count_per_address_and_in_all() -> None:
    quotas = ConnectionQuotas(max_connections=3, max_per_ip=2, overrides={"10.0.0.9": 0})
    assert quotas.admit("10.0.0.1") is None
    assert quotas.admit("10.0.0.1") is None
    assert quotas.admit("10.0.0.1") == "10.0.0.1 already has 2 connections (limit 2)"
    assert quotas.admit("10.0.0.9") is not None
    assert not quotas.full
    assert quotas.admit("10.0.0.2") is None
    assert quotas.full
    quotas.release("10.0.0.1")
    assert (quotas.full, quotas.count("10.0.0.1"), quotas.total) == (False, 1, 2)


def test_overrides_take_addresses_and_names() -> None:
    assert parse_overrides("127.0.0.2:5, [::1]:1") == {"127.0.0.2": 5, "::1": 1}
    assert parse_overrides("localhost:7") in ({"127.0.0.1": 7}, {"::1": 7})
    assert parse_overrides("") == {}
    with pytest.raises(ConfigError, match=r"overrides: '127\.0\.0\.2' is not HOST:COUNT"):
        parse_settings(["max.connections.per.ip.overrides=127.0.0.2"])
    with pytest.raises(ConfigError, match=r"max\.connections"):
        parse_settings(["max.connections=0"])


async def connect(node: RunningServer, source: str = "127.0.0.1") -> WireClient:
    reader, writer = await asyncio.open_connection(node.host, node.port, local_addr=(source, 0))
    return WireClient(reader, writer)


async def served(client: WireClient, wait: float = 2.0) -> bool:
    """True if the server answers ApiVersions; False if it closed the connection."""
    try:
        response = await asyncio.wait_for(client.request(API_VERSIONS, 3, {}), wait)
    except (asyncio.IncompleteReadError, ConnectionError):
        return False
    return bool(response.api_keys)


@contextlib.asynccontextmanager
async def clients() -> AsyncIterator[list[WireClient]]:
    opened: list[WireClient] = []
    try:
        yield opened
    finally:
        for client in opened:
            await client.close()


async def test_a_flood_from_one_address_is_capped_while_others_are_served() -> None:
    settings = ["max.connections.per.ip=3", "max.connections.per.ip.overrides=127.0.0.3:1"]
    async with running_server(settings=settings) as node, clients() as opened:
        flood = [await connect(node) for _ in range(8)]
        opened += flood
        answered = [await served(client) for client in flood]
        assert answered == [True] * 3 + [False] * 5
        other = await connect(node, "127.0.0.2")
        opened.append(other)
        assert await served(other)
        overridden = [await connect(node, "127.0.0.3") for _ in range(2)]
        opened += overridden
        assert [await served(client) for client in overridden] == [True, False]
        assert node.app.server.quotas.count("127.0.0.1") == 3
        await flood[0].close()  # a place frees up
        for _attempt in range(100):
            if node.app.server.quotas.count("127.0.0.1") < 3:
                break
            await asyncio.sleep(0.01)
        late = await connect(node)
        opened.append(late)
        assert await served(late)
        assert await served(flood[1])  # the first ones were never disturbed


async def test_over_max_connections_new_clients_wait_until_one_closes() -> None:
    async with running_server(settings=["max.connections=2"]) as node, clients() as opened:
        first, second = await connect(node), await connect(node, "127.0.0.2")
        opened += [first, second]
        assert await served(first)
        assert await served(second)
        waiting = await connect(node, "127.0.0.3")  # in the listen backlog, not yet accepted
        opened.append(waiting)
        pending = asyncio.ensure_future(served(waiting, wait=5.0))
        await asyncio.sleep(0.3)
        assert not pending.done()
        await first.close()
        assert await pending
        assert await served(second)


def test_creation_rate_allows_a_burst_of_one_second_then_the_rate() -> None:
    quotas = ConnectionQuotas(creation_rate=4)
    delays = []
    for _ in range(6):
        delays.append(quotas.accept_delay(100.0))
        quotas.admit("10.0.0.1", 100.0)
    assert delays == [0.0] * 4 + [0.25, 0.5]
    assert quotas.accept_delay(100.5) == 0.25  # 2 tokens back after 0.5 s: the debt paid
    assert quotas.accept_delay(100.75) == 0.0
    assert ConnectionQuotas().accept_delay(0.0) == 0.0  # unlimited by default, as in Kafka


async def test_connections_over_the_creation_rate_wait_their_turn() -> None:
    settings = ["max.connection.creation.rate=20"]
    async with running_server(settings=settings) as node, clients() as opened:
        loop = asyncio.get_running_loop()
        started = loop.time()
        opened += [await connect(node) for _ in range(30)]  # connected in the backlog at once
        assert all([await served(client) for client in opened])
        # 20 at once, then 20 a second: the last 10 take half a second at least.
        assert loop.time() - started >= 0.45


async def test_a_listener_limit_holds_its_clients_back_and_no_other_listeners() -> None:
    settings = [
        "listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "listener.name.internal.max.connections=2",
    ]
    async with running_server(settings=settings) as node, clients() as opened:

        async def to(listener: str) -> WireClient:
            host, port = node.bootstrap_of(listener).rsplit(":", 1)
            reader, writer = await asyncio.open_connection(host, int(port))
            opened.append(WireClient(reader, writer))
            return opened[-1]

        first, second = await to("INTERNAL"), await to("INTERNAL")
        assert await served(first) and await served(second)
        waiting = await to("INTERNAL")  # in the listener's backlog, not yet accepted
        pending = asyncio.ensure_future(served(waiting, wait=5.0))
        # The node's other listener is not held back: three more clients served at once.
        assert all([await served(await to("PLAINTEXT")) for _ in range(3)])
        assert not pending.done()
        await first.close()
        assert await pending


def test_listener_limits_are_checked_at_start() -> None:
    config = parse_settings(["listener.name.plaintext.max.connection.creation.rate=50"])
    assert config.listener_limits == {"PLAINTEXT": {"max.connection.creation.rate": 50}}
    with pytest.raises(ConfigError, match=r"listener\.name\.ssl\.max\.connections: no listener"):
        parse_settings(["listener.name.ssl.max.connections=5"])
    with pytest.raises(ConfigError, match=r"0 is not in 1-2147483647"):
        parse_settings(["listener.name.plaintext.max.connections=0"])
