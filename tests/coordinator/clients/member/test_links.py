"""A member's connections, against a real node: the bootstrap connection kept while open and
opened to the next server in turn once lost; the coordinator's opened for its address, kept, and
opened again when the address changes; an unknown coordinator is a lost connection."""

from __future__ import annotations

import pytest

from coordinator.clients.member.connection import ConnectionLost
from coordinator.clients.member.links import Links
from coordinator.testing.server import RunningServer


async def test_the_bootstrap_connection_is_kept_then_the_next_server_tried(
    node: RunningServer,
) -> None:
    unreachable = ("127.0.0.1", 1)
    links = Links([(node.host, node.port), unreachable], "c", 2.0)
    try:
        first = await links.bootstrap()
        assert await links.bootstrap() is first
        first.close()
        with pytest.raises(ConnectionLost):  # the next server in turn: nobody listens there
            await links.bootstrap()
        assert not (await links.bootstrap()).closed  # and then the first again
    finally:
        links.close()
        await links.wait_closed()


async def test_the_coordinator_connection_follows_its_address(node: RunningServer) -> None:
    links = Links([(node.host, node.port)], "c", 2.0)
    try:
        with pytest.raises(ConnectionLost, match="coordinator unknown"):
            await links.coordinator(None)
        first = await links.coordinator((node.host, node.port))
        assert await links.coordinator((node.host, node.port)) is first
        moved = await links.coordinator(("localhost", node.port))  # another address
        assert moved is not first and first.closed
    finally:
        links.close()
        await links.wait_closed()
