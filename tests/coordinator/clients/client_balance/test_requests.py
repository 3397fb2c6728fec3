"""A client-balance node's requests, each against a real node: a join gives the member epoch and
the heartbeat interval; a registration is the partition's answer; a heartbeat's answer lists what
the coordinator books as the node's; a commit of a partition not registered names it as refused;
a release and a leave clear the book."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.clients.client_balance import requests
from coordinator.clients.client_balance.config import ClientBalanceConfig
from coordinator.clients.client_balance.connections import Connections
from coordinator.clients.client_balance.errors import ClientBalanceError
from coordinator.clients.client_balance.partitions import PartitionState
from coordinator.testing.server import RunningServer
from rebalance.errors import ErrorCode


def booked(answer: Any) -> set[tuple[str, int]]:
    return {(h.topic, int(p)) for h in answer.held for p in h.partitions}


async def test_a_node_joins_registers_commits_releases_and_leaves(node: RunningServer) -> None:
    connections = Connections(ClientBalanceConfig(node.bootstrap, "g", session_timeout_ms=5000))
    try:
        epoch, interval_s = await requests.join(connections, "n1", 2, 0, ["t"])
        assert epoch > 0 and interval_s > 0
        leaders, meta = await requests.metadata(connections, ["t"])
        assert len(meta) == 6 and all(meta.values()) and len(leaders) == 1
        answer = await requests.register(connections, "n1", epoch, "t", 0, -1)
        assert int(answer.error_code) == 0 and int(answer.offset) == -1  # nothing committed
        beat = await requests.heartbeat(connections, "n1", epoch, [("t", 0)])
        assert int(beat.error_code) == 0 and booked(beat) == {("t", 0)}
        held = PartitionState(1, "t", 0, 3, 3)
        assert await requests.commit(connections, "n1", epoch, [held]) is None
        not_held = PartitionState(1, "t", 1, 2, 2)
        refused = await requests.commit(connections, "n1", epoch, [held, not_held])
        assert refused is not None and refused[0] == "1:t:1"
        await requests.release(connections, "n1", epoch, "t", 0)
        beat = await requests.heartbeat(connections, "n1", epoch, [])
        assert booked(beat) == set()
        await requests.leave(connections, "n1")
    finally:
        await connections.close()


async def test_a_refused_join_is_raised(node: RunningServer) -> None:
    connections = Connections(ClientBalanceConfig(node.bootstrap, "g"))
    try:
        await requests.join(connections, "n1", 2, 0, ["t"])
        with pytest.raises(ClientBalanceError) as refused:  # node id 0 is n1's
            await requests.join(connections, "n2", 2, 0, ["t"])
        assert refused.value.code == ErrorCode.CLIENT_DUPLICATE_INDEXID
    finally:
        await connections.close()
