"""The asyncio runtime around the core: replies wait for durability, timers re-enter the core,
a failed write reloads from what is durable, and a restart rebuilds groups from the store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from coordinator.groups.record_codec import RecordFormatError, decode, encode
from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.base import StoredRecord, StoreError
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
)
from rebalance.classic.replies import HeartbeatReply, JoinGroupReply, SyncGroupReply
from rebalance.replies import OffsetCommitReply, OffsetFetchReply

CONFIG = CoordinatorConfig.from_properties(
    {"group.initial.rebalance.delay.ms": "50", "group.min.session.timeout.ms": "100"}
)


class GatedStore(MemoryStore):
    """A store whose appends wait for the test to open the gate (or fail)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.fail_next = False
        self.appends = 0

    async def append(self, records: Sequence[StoredRecord]) -> None:
        await self.gate.wait()
        self.appends += 1
        if self.fail_next:
            self.fail_next = False
            raise StoreError("disk full")
        await super().append(records)


def join(member_id: str = "", session_ms: int = 10_000) -> JoinGroup:
    return JoinGroup("g", member_id, "consumer", (("range", b"m"),), session_ms, 10_000, version=3)


def commit(member_id: str, generation: int, offset: int) -> OffsetCommit:
    return OffsetCommit(
        "g", (CommitTopic("t", (CommitPartition(0, offset),)),), generation, member_id
    )


async def started(store: MemoryStore) -> GroupRuntime:
    runtime = GroupRuntime(GroupCoordinatorCore(CONFIG, SplitMix64(3)), store)
    await runtime.start()
    return runtime


async def form(runtime: GroupRuntime) -> tuple[str, int]:
    reply = await runtime.submit(join())
    assert isinstance(reply, JoinGroupReply) and reply.error is ErrorCode.NONE
    synced = await runtime.submit(
        SyncGroup("g", reply.generation_id, reply.member_id, ((reply.member_id, b"a"),), version=3)
    )
    assert isinstance(synced, SyncGroupReply) and synced.error is ErrorCode.NONE
    return reply.member_id, reply.generation_id


async def test_a_reply_waits_until_its_records_are_durable() -> None:
    store = GatedStore()
    store.gate.set()
    runtime = await started(store)
    member, generation = await form(runtime)
    store.gate.clear()
    pending = asyncio.ensure_future(runtime.submit(commit(member, generation, 7)))
    await asyncio.sleep(0.05)
    assert not pending.done(), "a commit was acknowledged before it was durable"
    # A heartbeat writes nothing, but must not overtake the commit's durability either.
    beat = asyncio.ensure_future(runtime.submit(Heartbeat("g", generation, member)))
    await asyncio.sleep(0.05)
    assert not beat.done()
    store.gate.set()
    reply = await pending
    assert isinstance(reply, OffsetCommitReply) and reply.topics[0][1][0][1] is ErrorCode.NONE
    beat_reply = await beat
    assert isinstance(beat_reply, HeartbeatReply) and beat_reply.error is ErrorCode.NONE
    await runtime.close()


async def test_timers_fire_through_the_loop_and_expire_silent_members() -> None:
    store = GatedStore()
    store.gate.set()
    runtime = await started(store)
    reply = await runtime.submit(join(session_ms=150))
    assert isinstance(reply, JoinGroupReply)
    # The member never heartbeats nor syncs: its session timer fires and the group empties.
    await asyncio.sleep(0.6)
    group = runtime.core.group("g")
    assert group is not None and group.kafka_state == "Empty"
    await runtime.close()


async def test_a_failed_write_answers_not_coordinator_and_reloads_durable_state() -> None:
    store = GatedStore()
    store.gate.set()
    runtime = await started(store)
    member, generation = await form(runtime)
    first = await runtime.submit(commit(member, generation, 5))
    assert isinstance(first, OffsetCommitReply)
    store.fail_next = True
    failed = await runtime.submit(commit(member, generation, 9))
    assert isinstance(failed, OffsetCommitReply)
    assert failed.topics[0][1][0][1] is ErrorCode.NOT_COORDINATOR
    await asyncio.sleep(0.05)  # the partition reloads from the store
    fetched = await runtime.submit(OffsetFetch("g", (("t", (0,)),)))
    assert isinstance(fetched, OffsetFetchReply)
    assert fetched.topics[0][1][0].offset == 5, "the lost write must not be visible"
    await runtime.close()


async def test_restart_on_sqlite_rebuilds_groups_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "groups.sqlite"
    store = SqliteStore(path)
    runtime = GroupRuntime(GroupCoordinatorCore(CONFIG, SplitMix64(3)), store)
    await runtime.start()
    member, generation = await form(runtime)
    await runtime.submit(commit(member, generation, 42))
    await runtime.close()
    store.close()

    store = SqliteStore(path)
    runtime = GroupRuntime(GroupCoordinatorCore(CONFIG, SplitMix64(4)), store)
    await runtime.start()
    group = runtime.core.group("g")
    assert group is not None
    assert (group.kafka_state, group.generation, group.leader_id) == ("Stable", generation, member)
    assert group.members[member].assignment == b"a"
    fetched = await runtime.submit(OffsetFetch("g", (("t", (0,)),)))
    assert isinstance(fetched, OffsetFetchReply) and fetched.topics[0][1][0].offset == 42
    # The restarted coordinator still fences by generation.
    stale = await runtime.submit(commit(member, generation - 1, 1))
    assert isinstance(stale, OffsetCommitReply)
    assert stale.topics[0][1][0][1] is ErrorCode.ILLEGAL_GENERATION
    await runtime.close()
    store.close()


def test_record_rows_round_trip_and_refuse_newer_versions() -> None:
    runtime_core = GroupCoordinatorCore(CONFIG, SplitMix64(1))
    for p in range(CONFIG.offsets_topic_num_partitions):
        runtime_core.load(p, (), 0)
    result = runtime_core.handle(join(), 0, 1)
    for record in result.records:
        assert decode(encode(record)) == record
    row = encode(result.records[0])
    assert row.value is not None
    newer = StoredRecord(row.kind, row.key, json.dumps({**json.loads(row.value), "v": 2}).encode())
    with pytest.raises(RecordFormatError, match=r"version 2.*newer"):
        decode(newer)
    with pytest.raises(RecordFormatError, match="unreadable"):
        decode(StoredRecord(row.kind, row.key, b'{"v": 1}'))


async def test_heartbeat_now_answers_at_once_only_when_no_write_is_pending() -> None:
    store = GatedStore()
    store.gate.set()
    runtime = await started(store)
    member, generation = await form(runtime)
    reply = runtime.heartbeat_now(Heartbeat("g", generation, member))
    assert reply is not None and reply.error is ErrorCode.NONE
    store.gate.clear()
    pending = asyncio.ensure_future(runtime.submit(commit(member, generation, 3)))
    await asyncio.sleep(0.02)
    # The commit is not durable yet: an immediate answer would overtake it.
    assert runtime.heartbeat_now(Heartbeat("g", generation, member)) is None
    store.gate.set()
    await pending
    assert runtime.heartbeat_now(Heartbeat("g", generation, member)) is not None
    await runtime.close()


async def test_an_epoch_bump_for_topics_moved_while_unloaded_is_written(tmp_path: Path) -> None:
    # A KIP-848 group whose topic grew while no coordinator had it loaded: the load writes
    # nothing (Kafka's `onLoaded`), the first heartbeat finds the metadata moved and bumps the
    # epoch; that bump is a decision like any other and is durable once answered.
    from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
    from rebalance.consumer_group.records import GroupEpochValue
    from rebalance.topics import TopicInfo, TopicMetadata

    def epochs_stored() -> list[int]:
        store = SqliteStore(path)
        rows = [decode(row) for row in store.load()]
        store.close()
        values = [getattr(r, "value", None) for r in rows]
        return [v.epoch for v in values if isinstance(v, GroupEpochValue)]

    async def run(partitions: int, *beats: ConsumerGroupHeartbeat) -> None:
        store = SqliteStore(path)
        runtime = GroupRuntime(GroupCoordinatorCore(CONFIG, SplitMix64(partitions)), store)
        runtime.core.topics_changed(TopicMetadata.of([TopicInfo("t", "id-t", partitions)]), 0)
        await runtime.start()
        for heartbeat in beats:
            assert (await runtime.submit(heartbeat)).error is ErrorCode.NONE
        await runtime.close()
        store.close()

    path = tmp_path / "groups.sqlite"
    join = ConsumerGroupHeartbeat(
        "cg", "m1", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=("t",),
        server_assignor="uniform", topic_partitions=(),
    )  # fmt: skip
    await run(2, join)
    assert max(epochs_stored()) == 2
    await run(4)  # t grew from 2 to 4 partitions while the group was not loaded
    assert max(epochs_stored()) == 2
    await run(4, ConsumerGroupHeartbeat("cg", "m1", 2, topic_partitions=(("id-t", (0, 1)),)))
    assert max(epochs_stored()) == 3


async def test_submit_then_hands_over_each_reply_once_and_only_when_durable() -> None:
    """The callback form the wire server parks JoinGroup/SyncGroup with: a reply the core
    gives at once comes before `submit_then` returns; a parked one, or one with records to
    write, comes from the loop once durable; a failed write hands over NOT_COORDINATOR."""
    store = GatedStore()
    store.gate.set()
    runtime = await started(store)
    member, generation = await form(runtime)
    got: list[object] = []
    runtime.submit_then(Heartbeat("g", generation, member), got.append)
    assert len(got) == 1 and isinstance(got[0], HeartbeatReply)  # before returning
    store.gate.clear()
    runtime.submit_then(commit(member, generation, 7), got.append)
    runtime.submit_then(Heartbeat("g", generation, member), got.append)  # behind the write
    await asyncio.sleep(0.05)
    assert len(got) == 1, "a reply was handed over before the records were durable"
    store.gate.set()
    await asyncio.sleep(0.05)
    assert [type(reply) for reply in got] == [HeartbeatReply, OffsetCommitReply, HeartbeatReply]
    store.gate.clear()
    store.fail_next = True
    runtime.submit_then(commit(member, generation, 8), got.append)
    runtime.submit_then(Heartbeat("g", generation, member), got.append)  # behind it too
    store.gate.set()
    await asyncio.sleep(0.1)
    failed, beat = got[-2:]
    assert isinstance(failed, OffsetCommitReply)
    assert failed.topics[0][1][0][1] is ErrorCode.NOT_COORDINATOR
    assert isinstance(beat, HeartbeatReply) and beat.error is ErrorCode.NOT_COORDINATOR
    assert len(got) == 5
    await runtime.close()
