"""Clients are told the nodes the `Ownership` names (`coordinator.node.coordinators`):
FindCoordinator answers the owner of the group's `__consumer_offsets` partition,
COORDINATOR_NOT_AVAILABLE while none holds it; Metadata and DescribeCluster list every live node.
This node is always named at the address of the listener the client asked; the others at
theirs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from movable_ownership import Placement

from coordinator.testing.server import RunningServer, WireClient
from rebalance.placement import partition_for

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60
OTHER = ("10.0.0.2", 9093)  # node 2: no server behind it, only an address to be told

# Two groups on different partitions.
HERE, THERE = "group-a", "group-b"
assert partition_for(HERE) != partition_for(THERE)


@pytest.fixture
async def placement(node: RunningServer) -> AsyncIterator[Placement]:
    """Node 1 (this one, held in the placement at an address it is not reached at) and node 2;
    node 1 holds every partition but THERE's, which node 2 holds."""
    placement = Placement(default=1)
    placement.add(1, "node-1.internal", 1)
    placement.add(2, *OTHER)
    placement.move(partition_for(THERE), 2)
    kept = node.broker.ownership
    node.broker.ownership = placement.view(1)
    yield placement
    node.broker.ownership = kept


def coordinator(response: Any, version: int, index: int = 0) -> tuple[object, ...]:
    entry = response.coordinators[index] if version >= 4 else response
    return (entry.error_code, entry.node_id, entry.host, entry.port)


async def find(client: WireClient, version: int, *keys: str) -> Any:
    return await client.request(
        FIND_COORDINATOR, version, {"key": keys[0], "key_type": 0, "coordinator_keys": list(keys)}
    )


@pytest.mark.parametrize("version", range(7))
async def test_find_coordinator_names_the_owner_of_the_groups_partition(
    node: RunningServer, client: WireClient, placement: Placement, version: int
) -> None:
    here = coordinator(await find(client, version, HERE), version)
    there = coordinator(await find(client, version, THERE), version)
    assert here == (ErrorCode.none, 1, node.host, node.port)
    assert there == (ErrorCode.none, 2, *OTHER)


@pytest.mark.parametrize("version", range(7))
async def test_find_coordinator_without_an_owner_is_coordinator_not_available(
    client: WireClient, placement: Placement, version: int
) -> None:
    placement.move(partition_for(THERE), None)
    response = await find(client, version, THERE)
    assert coordinator(response, version) == (ErrorCode.coordinator_not_available, -1, "", -1)
    if version >= 1:
        entry = response.coordinators[0] if version >= 4 else response
        assert entry.error_message == "The coordinator is not available."  # Kafka's words


async def test_a_batched_find_coordinator_answers_each_key_by_its_partition(
    node: RunningServer, client: WireClient, placement: Placement
) -> None:
    nobody = next(g for g in (f"g{i}" for i in range(100)) if partition_for(g) not in {
        partition_for(HERE), partition_for(THERE)})  # fmt: skip
    placement.move(partition_for(nobody), None)
    response = await find(client, 4, HERE, THERE, nobody)
    keys = [c.key for c in response.coordinators]
    assert [(key, *coordinator(response, 4, i)) for i, key in enumerate(keys)] == [
        (HERE, ErrorCode.none, 1, node.host, node.port),
        (THERE, ErrorCode.none, 2, *OTHER),
        (nobody, ErrorCode.coordinator_not_available, -1, "", -1),
    ]


async def test_a_moved_partition_is_answered_by_its_new_owner(
    node: RunningServer, client: WireClient, placement: Placement
) -> None:
    placement.move(partition_for(HERE), 2)
    placement.move(partition_for(THERE), 1)
    assert coordinator(await find(client, 3, HERE), 3) == (ErrorCode.none, 2, *OTHER)
    assert coordinator(await find(client, 3, THERE), 3) == (
        ErrorCode.none, 1, node.host, node.port)  # fmt: skip


@pytest.mark.parametrize("version", [1, 5, 13])
async def test_metadata_lists_every_live_node_and_the_owners_as_offsets_leaders(
    node: RunningServer, client: WireClient, placement: Placement, version: int
) -> None:
    placement.move(partition_for(HERE), None)
    response = await client.request(METADATA, version, {"topics": None})
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
        (1, node.host, node.port), (2, *OTHER)]  # fmt: skip
    assert response.controller_id == 1
    (offsets,) = [t for t in response.topics if t.name == "__consumer_offsets"]
    leaders = {p.partition_index: (p.error_code, p.leader_id) for p in offsets.partitions}
    assert leaders[partition_for(THERE)] == (ErrorCode.none, 2)
    assert leaders[partition_for(HERE)] == (ErrorCode.leader_not_available, -1)
    others = set(range(50)) - {partition_for(HERE), partition_for(THERE)}
    assert {leaders[p] for p in others} == {(ErrorCode.none, 1)}


async def test_describe_cluster_lists_every_live_node(
    node: RunningServer, client: WireClient, placement: Placement
) -> None:
    response = await client.request(DESCRIBE_CLUSTER, 1, {"endpoint_type": 1})
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [
        (1, node.host, node.port), (2, *OTHER)]  # fmt: skip
    assert response.controller_id == 1


async def test_this_node_is_listed_while_its_own_registration_lapses(
    node: RunningServer, client: WireClient, placement: Placement
) -> None:
    del placement.nodes[1]
    response = await client.request(METADATA, 13, {"topics": []})
    assert [(b.node_id, b.port) for b in response.brokers] == [(1, node.port), (2, OTHER[1])]


async def test_a_single_node_names_itself_for_every_group(
    node: RunningServer, client: WireClient
) -> None:
    for group in (HERE, THERE, ""):
        assert coordinator(await find(client, 6, group), 6) == (
            ErrorCode.none, 1, node.host, node.port)  # fmt: skip
