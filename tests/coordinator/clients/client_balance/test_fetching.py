"""Records into the registered partitions' buffers: one Fetch fills each from its fetch
position, and moves that position past what it got; a partition released while the fetch was out
is left out; a partition with no committed offset starts at its log's start or end."""

from __future__ import annotations

import asyncio

from coordinator.clients.client_balance.config import ClientBalanceConfig
from coordinator.clients.client_balance.connections import Connections
from coordinator.clients.client_balance.fetching import fetch, reset_offset
from coordinator.clients.client_balance.partitions import PartitionState
from coordinator.testing.server import RunningServer
from coordinator.wire.client import WireClient


async def test_a_fetch_fills_the_buffers_from_their_fetch_positions(node: RunningServer) -> None:
    connections = Connections(ClientBalanceConfig(node.bootstrap, "g"))

    async def leader(broker: int) -> tuple[WireClient, asyncio.Lock]:
        return await connections.leader((node.host, node.port))

    try:
        parts = {"1:t:0": PartitionState(1, "t", 0, 0, 0), "1:t:1": PartitionState(1, "t", 1, 3, 3)}
        await fetch(leader, parts, ["1:t:0", "1:t:1"], 100)
        assert [m.value for m in parts["1:t:0"].buffer] == [f"0-{i}".encode() for i in range(5)]
        assert [m.offset for m in parts["1:t:1"].buffer] == [3, 4]
        assert [p.fetch_position for p in parts.values()] == [5, 5]
        assert [p.max_offset for p in parts.values()] == [5, 5]
        assert [p.position for p in parts.values()] == [0, 3]  # consuming has not moved
        assert await reset_offset(leader, 1, "t", 2, "earliest") == 0
        assert await reset_offset(leader, 1, "t", 2, "latest") == 5
    finally:
        await connections.close()
