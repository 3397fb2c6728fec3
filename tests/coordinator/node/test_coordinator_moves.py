"""An unmodified aiokafka consumer follows its group's coordinator from one node to another, as it
follows a Kafka partition leader change: two nodes in this process over one SQLite file, their
partitions placed by a test's `Ownership` (`movable_ownership`; cluster mode's real one is
PostgreSQL's lease). Node 1 coordinates the group; the partition moves to node 2 (node 1 resigns
it, node 2 takes it over); the consumer's next request to node 1 gets NOT_COORDINATOR, it asks
FindCoordinator, is told node 2, and carries on there with the same generation (aiokafka's
`coordinator_dead` does not rejoin): its commits before the move are there, those after it land."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from movable_ownership import Placement

from coordinator.groups.extension import STORE_FILE, GroupCoordinatorExtension
from coordinator.groups.runtime import GroupRuntime
from coordinator.node.contract import Broker
from coordinator.testing.server import TEST_DEFAULTS, RunningServer, running_server
from rebalance import OffsetFetch, partition_for
from rebalance.replies import OffsetFetchReply

GROUP, TOPIC = "moving-group", "moves"
P = partition_for(GROUP)
DEADLINE_S = 20.0


class PlacedGroups:
    """The group coordinator on a node whose partitions `placement` places: the node's
    `Ownership` is set before the coordinator starts, so it loads only what it holds."""

    def __init__(self, placement: Placement, node_id: int) -> None:
        self.placement, self.node_id = placement, node_id
        self.groups = GroupCoordinatorExtension()

    @contextlib.asynccontextmanager
    async def __call__(self, broker: Broker) -> AsyncIterator[GroupRuntime]:
        broker.ownership = self.placement.view(self.node_id)
        async with self.groups(broker) as runtime:
            yield runtime


@contextlib.asynccontextmanager
async def node(placement: Placement, node_id: int, data_dir: Path) -> AsyncIterator[RunningServer]:
    extension = PlacedGroups(placement, node_id)
    async with running_server(
        topics=[(TOPIC, 1)],
        settings={**TEST_DEFAULTS, "node.id": node_id},
        claims=[extension.groups],
        extensions=[extension],
        groups=False,
        data_dir=data_dir,
    ) as server:
        placement.add(node_id, server.host, server.port)
        yield server


def runtime_of(server: RunningServer) -> GroupRuntime:
    runtime = server.broker.groups
    assert isinstance(runtime, GroupRuntime)
    return runtime


async def committed_on(server: RunningServer) -> int:
    reply = await runtime_of(server).submit(OffsetFetch(GROUP, ((TOPIC, (0,)),)))
    assert isinstance(reply, OffsetFetchReply)
    return reply.topics[0][1][0].offset


async def until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_an_aiokafka_consumer_follows_its_coordinator_to_the_new_owner(
    tmp_path: Path,
) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    placement = Placement(default=1)
    first_dir, second_dir = tmp_path / "node-1", tmp_path / "node-2"
    async with node(placement, 1, first_dir) as first:
        # One store for both: node 2's store file is node 1's (a shared database, as cluster
        # mode's PostgreSQL is; each node still has a data dir of its own).
        second_dir.mkdir()
        (second_dir / STORE_FILE).symlink_to(first_dir / STORE_FILE)
        async with node(placement, 2, second_dir) as second:
            assert P not in runtime_of(second).core.state.partitions
            consumer = AIOKafkaConsumer(
                TOPIC,
                bootstrap_servers=first.bootstrap,
                group_id=GROUP,
                enable_auto_commit=False,
                session_timeout_ms=6000,
                heartbeat_interval_ms=100,
                retry_backoff_ms=50,
            )
            await consumer.start()
            try:
                tp = TopicPartition(TOPIC, 0)
                await until(lambda: consumer.assignment() == {tp}, "the assignment")
                await consumer.commit({tp: 5})
                group = runtime_of(first).core.group(GROUP)
                assert group is not None
                generation = group.generation

                placement.move(P, 2)
                runtime_of(first).resign(P)
                await runtime_of(second).take_over(P)
                moved = runtime_of(second).core.group(GROUP)
                assert moved is not None and moved.generation == generation
                assert await committed_on(second) == 5  # what node 1 acknowledged

                await consumer.commit({tp: 7})  # through FindCoordinator, at node 2
                assert await committed_on(second) == 7
                assert await consumer.committed(tp) == 7
                await asyncio.sleep(0.5)  # heartbeats go to node 2 now, and are answered
                assert consumer.assignment() == {tp}
                still = runtime_of(second).core.group(GROUP)
                assert still is not None and still.generation == generation  # no rejoin
                assert runtime_of(first).core.group(GROUP) is None
            finally:
                await consumer.stop()
