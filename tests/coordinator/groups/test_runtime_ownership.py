"""The runtime owns a changing set of `__consumer_offsets` partitions (cluster mode's node side):
`take_over` loads one (Kafka's onElection), `resign` unloads it (onResignation), a reply goes out
only while the node's `Ownership` says it may answer for the group's partition, judged when the
reply is handed over, and a write the store fences resigns its partitions instead of reloading
them. The ownership is a test's (`movable_ownership`); the real one is PostgreSQL's lease."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from movable_ownership import Placement

from coordinator.errors import FencedError
from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.base import RecordStore, StoredRecord
from coordinator.groups.store.memory import MemoryStore
from coordinator.groups.store.sqlite import SqliteStore
from rebalance import (
    CommitPartition,
    CommitTopic,
    CoordinatorConfig,
    ErrorCode,
    GroupCoordinatorCore,
    Heartbeat,
    JoinGroup,
    OffsetCommit,
    OffsetFetch,
    SplitMix64,
    SyncGroup,
    partition_for,
)
from rebalance.classic.replies import JoinGroupReply, SyncGroupReply
from rebalance.replies import OffsetCommitReply, OffsetFetchReply

CONFIG = CoordinatorConfig.from_properties(
    {"group.initial.rebalance.delay.ms": "50", "group.min.session.timeout.ms": "100"}
)
P = partition_for("g")  # the partition of group "g"


def join(member_id: str = "") -> JoinGroup:
    return JoinGroup("g", member_id, "consumer", (("range", b"m"),), 10_000, 10_000, version=3)


def commit(member_id: str, generation: int, offset: int) -> OffsetCommit:
    return OffsetCommit(
        "g", (CommitTopic("t", (CommitPartition(0, offset),)),), generation, member_id
    )


def commit_error(reply: object) -> ErrorCode:
    assert isinstance(reply, OffsetCommitReply)
    return reply.topics[0][1][0][1]


async def runtime_of(
    store: RecordStore, placement: Placement, node_id: int = 1, seed: int = 3
) -> GroupRuntime:
    runtime = GroupRuntime(
        GroupCoordinatorCore(CONFIG, SplitMix64(seed)), store, ownership=placement.view(node_id)
    )
    await runtime.start()  # the partitions the ownership lets it answer for
    return runtime


async def form(runtime: GroupRuntime) -> tuple[str, int]:
    reply = await runtime.submit(join())
    assert isinstance(reply, JoinGroupReply) and reply.error is ErrorCode.NONE
    synced = await runtime.submit(
        SyncGroup("g", reply.generation_id, reply.member_id, ((reply.member_id, b"a"),), version=3)
    )
    assert isinstance(synced, SyncGroupReply) and synced.error is ErrorCode.NONE
    return reply.member_id, reply.generation_id


def owns(runtime: GroupRuntime, partition: int) -> bool:
    return partition in runtime.core.state.partitions


class SlowLoadStore(MemoryStore):
    """A store whose `load` (run in a thread) waits until the test lets it go on."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.loading = threading.Event()

    def load(self, partitions: Collection[int] | None = None) -> Iterator[StoredRecord]:
        self.loading.set()
        self.release.wait(5)
        return super().load(partitions)


class FencingStore(MemoryStore):
    """A store that refuses the writes of partitions another node took over, as PostgreSQL's
    epoch check does."""

    def __init__(self) -> None:
        super().__init__()
        self.fenced: tuple[int, ...] = ()

    async def append(self, records: Sequence[StoredRecord]) -> None:
        if self.fenced:
            raise FencedError(self.fenced, f"fenced: partitions {self.fenced} taken over")
        await super().append(records)


async def test_a_partition_the_node_does_not_own_answers_not_coordinator() -> None:
    placement = Placement(default=1)
    placement.move(P, 2)
    runtime = await runtime_of(MemoryStore(), placement)
    assert not owns(runtime, P) and owns(runtime, (P + 1) % 50)
    joined = await runtime.submit(join())
    assert isinstance(joined, JoinGroupReply) and joined.error is ErrorCode.NOT_COORDINATOR
    beat = runtime.heartbeat_now(Heartbeat("g", 1, "m"))
    assert beat is not None and beat.error is ErrorCode.NOT_COORDINATOR
    assert commit_error(await runtime.submit(commit("m", 1, 5))) is ErrorCode.NOT_COORDINATOR
    fetched = await runtime.submit(OffsetFetch("g", (("t", (0,)),)))
    assert isinstance(fetched, OffsetFetchReply) and fetched.error is ErrorCode.NOT_COORDINATOR
    await runtime.close()


async def test_take_over_answers_load_in_progress_until_the_partition_is_loaded() -> None:
    store = SlowLoadStore()
    store.release.set()
    placement = Placement(default=None)
    runtime = await runtime_of(store, placement)
    assert runtime.core.state.partitions == {}
    placement.move(P, 1)
    store.release.clear()
    store.loading.clear()
    loading = asyncio.create_task(runtime.take_over(P))
    await asyncio.to_thread(store.loading.wait, 5)
    joined = await runtime.submit(join())
    assert isinstance(joined, JoinGroupReply)
    assert joined.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    store.release.set()
    await loading
    member, generation = await form(runtime)
    assert generation == 1 and member
    await runtime.close()


async def test_resign_answers_a_parked_join_not_coordinator_and_unloads() -> None:
    placement = Placement(default=1)
    runtime = await runtime_of(MemoryStore(), placement)
    member, generation = await form(runtime)
    assert runtime.core.armed_timers()  # the member's session, the partition's retention
    newcomer = asyncio.ensure_future(runtime.submit(join()))  # parked: the member must rejoin
    await asyncio.sleep(0.01)
    assert not newcomer.done()
    placement.move(P, 2)
    runtime.resign(P)
    parked = await newcomer
    assert isinstance(parked, JoinGroupReply) and parked.error is ErrorCode.NOT_COORDINATOR
    beat = runtime.heartbeat_now(Heartbeat("g", generation, member))
    assert beat is not None and beat.error is ErrorCode.NOT_COORDINATOR
    assert runtime.core.group("g") is None and not owns(runtime, P)
    assert all(key[2] != P and key[1] != "g" for key in runtime.core.armed_timers())
    await runtime.close()


async def test_a_take_over_resigned_while_loading_is_abandoned() -> None:
    store = SlowLoadStore()
    store.release.set()
    placement = Placement(default=1)
    first = await runtime_of(store, placement)
    _, generation = await form(first)
    await first.close()
    store.release.clear()
    store.loading.clear()
    runtime = GroupRuntime(
        GroupCoordinatorCore(CONFIG, SplitMix64(4)), store, ownership=placement.view(1)
    )
    await runtime.start([])
    loading = asyncio.create_task(runtime.take_over(P))
    await asyncio.to_thread(store.loading.wait, 5)
    runtime.resign(P)  # the lease went while the rows were being read
    store.release.set()
    await loading
    assert not owns(runtime, P) and runtime.core.group("g") is None
    await runtime.take_over(P)  # given back: this load completes
    group = runtime.core.group("g")
    assert group is not None and group.generation == generation and owns(runtime, P)
    await runtime.close()


async def test_a_reply_computed_while_owning_but_sent_after_the_lease_lapsed_is_refused() -> None:
    class HeldStore(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.gate = asyncio.Event()
            self.gate.set()

        async def append(self, records: Sequence[StoredRecord]) -> None:
            await self.gate.wait()
            await super().append(records)

    store = HeldStore()
    placement = Placement(default=1)
    runtime = await runtime_of(store, placement)
    member, generation = await form(runtime)
    store.gate.clear()
    pending = asyncio.ensure_future(runtime.submit(commit(member, generation, 7)))
    await asyncio.sleep(0.01)
    assert not pending.done()  # computed: NONE, waiting for its write
    placement.lapse(1, P)  # the node's own lease deadline passes (frozen, say)
    store.gate.set()
    assert commit_error(await pending) is ErrorCode.NOT_COORDINATOR
    assert not owns(runtime, P) and runtime.core.group("g") is None  # resigned
    await runtime.close()


async def test_a_heartbeat_and_a_parked_join_after_the_lease_lapsed_are_refused() -> None:
    placement = Placement(default=1)
    runtime = await runtime_of(MemoryStore(), placement)
    member, generation = await form(runtime)
    placement.lapse(1, P)
    beat = runtime.heartbeat_now(Heartbeat("g", generation, member))
    assert beat is not None and beat.error is ErrorCode.NOT_COORDINATOR
    assert not owns(runtime, P)
    placement.move(P, 1)  # the lease is good again: taken over anew
    await runtime.take_over(P)
    newcomer = asyncio.ensure_future(runtime.submit(join()))
    await asyncio.sleep(0.01)
    assert not newcomer.done()  # parked until the member rejoins
    placement.lapse(1, P)
    rejoined = await runtime.submit(join(member))  # completes the round: both answered now
    joined = await newcomer
    for reply in (rejoined, joined):
        assert isinstance(reply, JoinGroupReply) and reply.error is ErrorCode.NOT_COORDINATOR
    assert not owns(runtime, P)
    await runtime.close()


async def test_a_partition_held_again_after_a_lapse_is_taken_over_at_the_next_request() -> None:
    """The deadline passed (the gate resigned the partition), then a late renewal extended the
    lease without announcing it anew: the next request for it loads it again."""
    placement = Placement(default=1)
    runtime = await runtime_of(MemoryStore(), placement)
    member, generation = await form(runtime)
    placement.lapse(1, P)
    beat = runtime.heartbeat_now(Heartbeat("g", generation, member))
    assert beat is not None and beat.error is ErrorCode.NOT_COORDINATOR and not owns(runtime, P)
    placement.move(P, 1)  # renewed: this node may answer again, nobody told the runtime
    beat = runtime.heartbeat_now(Heartbeat("g", generation, member))
    assert beat is not None and beat.error is ErrorCode.NOT_COORDINATOR  # not loaded yet
    await asyncio.sleep(0.05)
    assert owns(runtime, P)
    beat = runtime.heartbeat_now(Heartbeat("g", generation, member))
    assert beat is not None and beat.error is ErrorCode.NONE  # same member, same generation
    await runtime.close()


async def test_a_single_node_has_no_gate() -> None:
    runtime = GroupRuntime(GroupCoordinatorCore(CONFIG, SplitMix64(3)), MemoryStore())
    assert runtime._gate is None
    await runtime.start()
    assert len(runtime.core.state.partitions) == CONFIG.offsets_topic_num_partitions
    await runtime.close()


async def test_a_fenced_write_resigns_its_partitions_without_reloading_them() -> None:
    store = FencingStore()
    placement = Placement(default=1)
    runtime = await runtime_of(store, placement)
    member, generation = await form(runtime)
    placement.move(P, 2)  # taken over by node 2; this node has not heard of it yet
    store.fenced = (P,)
    assert commit_error(await runtime.submit(commit(member, generation, 9))) is (
        ErrorCode.NOT_COORDINATOR
    )
    await asyncio.sleep(0.05)  # a reload (of an unfenced failure) would have happened by now
    assert not owns(runtime, P) and runtime.core.group("g") is None
    assert len(runtime.core.state.partitions) == CONFIG.offsets_topic_num_partitions - 1
    await runtime.close()


async def test_take_over_restores_what_another_node_wrote(tmp_path: Path) -> None:
    """Two nodes over one store file: node 1 forms the group and commits, then hands the
    partition over; node 2 loads it with the generation, the member keeps it, the commit is
    there."""
    placement = Placement(default=1)
    path = tmp_path / "groups.sqlite"
    store_1, store_2 = SqliteStore(path), SqliteStore(path)
    node_1 = await runtime_of(store_1, placement, 1)
    node_2 = await runtime_of(store_2, placement, 2, seed=4)
    assert not node_2.core.state.partitions
    member, generation = await form(node_1)
    assert commit_error(await node_1.submit(commit(member, generation, 42))) is ErrorCode.NONE
    placement.move(P, 2)
    node_1.resign(P)
    await node_2.take_over(P)
    group = node_2.core.group("g")
    assert group is not None and group.generation == generation
    beat = node_2.heartbeat_now(Heartbeat("g", generation, member))
    assert beat is not None and beat.error is ErrorCode.NONE  # no rejoin
    fetched = await node_2.submit(OffsetFetch("g", (("t", (0,)),)))
    assert isinstance(fetched, OffsetFetchReply)
    assert fetched.topics[0][1][0].offset == 42
    assert commit_error(await node_2.submit(commit(member, generation, 43))) is ErrorCode.NONE
    old = node_1.heartbeat_now(Heartbeat("g", generation, member))
    assert old is not None and old.error is ErrorCode.NOT_COORDINATOR
    for runtime, store in ((node_1, store_1), (node_2, store_2)):
        await runtime.close()
        store.close()
