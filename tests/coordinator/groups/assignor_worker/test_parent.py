"""The assignor worker process, driven by its parent (`coordinator.groups.assignor_worker.parent`):
fed only what changed since its last computation, it gives exactly the target `compute_target`
gives inline, epoch after epoch (members joining, leaving, leaving and coming back, changing
subscription; topics created and grown; a result not applied, as when a newer epoch supersedes
it), for `uniform` (its incremental path) and `range`; a failure or the worker's death is
reported as a failed computation, after which the next one is right again."""

from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import Callable
from dataclasses import replace

import pytest

from coordinator.groups import record_codec
from coordinator.groups.assignor_worker import AssignorWorker, messages, parent
from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.base import StoredRecord
from coordinator.groups.store.memory import MemoryStore
from rebalance import CoordinatorConfig, GroupCoordinatorCore, SplitMix64
from rebalance.consumer_group import epochs
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.consumer_group.records import Assignment, ConsumerGroupRecord, TargetMemberValue
from rebalance.consumer_group.target import (
    ComputedTarget,
    MemberInputs,
    TargetInputs,
    compute_target,
)
from rebalance.records import Record
from rebalance.topics import TopicInfo, TopicMetadata


class Group:
    """A group as the core would hand it over: members in order, targets replaced (never
    edited) by each result."""

    def __init__(self, rng: random.Random, assignor: str, same: bool = False) -> None:
        self.rng = rng
        self.same = same  # every member subscribes to every topic: uniform's incremental path
        self.assignor = assignor
        self.epoch = 0
        self.topics = {
            f"t{n}": TopicInfo(f"t{n}", f"id-t{n}", rng.randint(1, 12)) for n in range(4)
        }
        self.metadata = TopicMetadata(dict(self.topics))
        self.members: dict[str, MemberInputs] = {}
        self.targets: dict[str, Assignment] = {}
        self.next_member = 0
        for _ in range(8):
            self.join()

    def subscription(self) -> tuple[str, ...]:
        if self.same:
            return tuple(sorted(self.topics))
        names = [*sorted(self.topics), "missing"]
        return tuple(sorted(self.rng.sample(names, self.rng.randint(1, len(names)))))

    def join(self, member_id: str | None = None) -> None:
        if member_id is None:
            self.next_member += 1
            member_id = f"m{self.next_member:03d}"
        regex = "t[01]" if self.rng.random() < 0.2 and not self.same else None
        rack = None if self.same else self.rng.choice([None, "a"])
        self.members[member_id] = MemberInputs(member_id, self.subscription(), regex, rack, None)

    def change(self) -> None:
        """One random change, as between two group epochs."""
        what = self.rng.choice(["join", "leave", "rejoin", "subscribe", "topic", "grow", "none"])
        ids = list(self.members)
        if what == "join" or (what in ("leave", "rejoin") and len(ids) < 3):
            self.join()
        elif what == "leave":
            gone = self.rng.choice(ids)
            del self.members[gone]
            self.targets.pop(gone, None)
        elif what == "rejoin":  # leaves and comes back at the end of the member order
            back = self.rng.choice(ids)
            del self.members[back]
            self.targets.pop(back, None)
            self.join(back)
        elif what == "subscribe" and not self.same:
            m = self.rng.choice(ids)
            self.members[m] = self.members[m]._replace(topic_names=self.subscription())
        elif what == "topic":
            n = len(self.topics)
            self.topics[f"t{n}"] = TopicInfo(f"t{n}", f"id-t{n}", self.rng.randint(1, 12))
            self.metadata = TopicMetadata(dict(self.topics))
            if self.same:
                for m, member in self.members.items():
                    self.members[m] = member._replace(topic_names=self.subscription())
        elif what == "grow":
            name = self.rng.choice(sorted(self.topics))
            self.topics[name] = replace(
                self.topics[name], partitions=self.topics[name].partitions + 3
            )
            self.metadata = TopicMetadata(dict(self.topics))

    def inputs(self) -> TargetInputs:
        self.epoch += 1
        return TargetInputs(
            "g",
            self.epoch,
            self.assignor,
            self.metadata,
            tuple(self.members.values()),
            dict(self.targets),
        )

    def apply(self, computed: ComputedTarget) -> None:
        for member_id, assignment in computed.changed.items():
            if member_id in self.members:
                self.targets[member_id] = assignment


def join(member: str) -> ConsumerGroupHeartbeat:
    return ConsumerGroupHeartbeat(
        "g", member, 0, rebalance_timeout_ms=30000, subscribed_topic_names=("t",),
        topic_partitions=(),
    )  # fmt: skip


def same(computed: ComputedTarget | None, inline: ComputedTarget) -> bool:
    """The worker's target is the inline one (its named forms are tuples, not lists)."""
    return computed is not None and (
        computed.changed,
        {m: list(named) for m, named in computed.by_name.items()},
    ) == (inline.changed, inline.by_name)


async def computed_by(worker: AssignorWorker, inputs: TargetInputs) -> ComputedTarget | None:
    done: asyncio.Future[ComputedTarget | None] = asyncio.get_running_loop().create_future()

    def finished(
        _: TargetInputs, computed: ComputedTarget | None, encode: Callable[[Record], StoredRecord]
    ) -> None:
        if computed is not None:  # the worker's encoded target records are record_codec's
            group_id = inputs.group_id
            for member_id, assignment in computed.changed.items():
                record = ConsumerGroupRecord(group_id, TargetMemberValue(member_id, assignment))
                assert encode(record) == record_codec.encode(record)
                # another assignment for that member (a later record): encoded here
                other = ConsumerGroupRecord(group_id, TargetMemberValue(member_id, ()))
                assert encode(other) == record_codec.encode(other)
        done.set_result(computed)

    worker.compute(inputs, finished)
    return await asyncio.wait_for(done, 30)


@pytest.mark.parametrize("same", [True, False], ids=["equal", "mixed"])
@pytest.mark.parametrize("assignor", ["uniform", "range"])
async def test_epoch_after_epoch_the_worker_gives_the_inline_target(
    assignor: str, same: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messages, "CHUNK_ENTRIES", 7)  # deltas in many messages
    worker = AssignorWorker(asyncio.get_running_loop())
    try:
        for seed in range(4):
            rng = random.Random(seed)
            group = Group(rng, assignor, same)
            for _ in range(12):
                inputs = group.inputs()
                computed = await computed_by(worker, inputs)
                inline = compute_target(inputs)
                assert computed is not None
                assert computed.changed == inline.changed, (seed, inputs.group_epoch)
                assert {m: list(named) for m, named in computed.by_name.items()} == inline.by_name
                assert list(computed.by_name) == list(inline.by_name)  # in member id order
                # what the worker holds, members in the group's order (a member that left and
                # came back is last)
                assert list(worker._mirrors["g"].members) == list(group.members)
                if rng.random() < 0.7:  # else superseded: the group keeps its targets
                    group.apply(computed)
                group.change()
            worker.keep_only(lambda group_id: group_id != "g")  # the group was deleted
            assert worker._mirrors == {}
    finally:
        await worker.close()


async def primed(worker: AssignorWorker) -> None:
    """Until every priming sent was echoed and its targets named."""
    for _ in range(3000):
        if not worker._priming:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("priming never finished")


@pytest.mark.parametrize("assignor", ["uniform", "range"])
async def test_a_primed_worker_gives_the_inline_target(
    assignor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messages, "CHUNK_ENTRIES", 7)  # priming in many paced frames
    worker = AssignorWorker(asyncio.get_running_loop())
    try:
        for seed in range(3):
            rng = random.Random(seed)
            group = Group(rng, assignor, same=seed == 0)
            for _ in range(3):  # a group with targets, as loaded
                group.apply(compute_target(group.inputs()))
                group.change()
            loaded = group.inputs()
            worker.prime(loaded)
            if seed == 1:
                # requested before the priming finished: it queues behind it and sends only
                # what changed since (nothing here), with the same result
                assert worker._priming
                early = await computed_by(worker, loaded)
                assert same(early, compute_target(loaded))
                assert early is not None
                group.apply(early)
            await primed(worker)
            mirror = worker._mirrors["g"]
            assert list(mirror.members) == list(group.members)
            assert all(mirror.targets[m] is t for m, t in group.targets.items())
            # every target was named, for the very objects the group holds
            made = worker._named.made_from("g")
            assert all(made[m] is t for m, t in group.targets.items())
            for _ in range(3):  # the first epochs after: ordinary ones
                group.change()
                inputs = group.inputs()
                computed = await computed_by(worker, inputs)
                assert same(computed, compute_target(inputs)), (seed, inputs.group_epoch)
                assert computed is not None
                group.apply(computed)
            worker.forget("g")
    finally:
        await worker.close()


async def test_the_runtime_primes_the_worker_with_each_big_group_it_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(epochs, "OFFLOAD_FROM", 0)
    config = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "0"})
    store = MemoryStore()
    metadata = TopicMetadata.of([TopicInfo("t", "id-t", 4)])
    runtime = GroupRuntime(GroupCoordinatorCore(config, SplitMix64(1)), store)
    await runtime.start()
    try:
        group = await two_members_joined(runtime)
        assert group.target_epoch == 3
    finally:
        await runtime.close()
    core = GroupCoordinatorCore(config, SplitMix64(1))
    core.topics_changed(metadata, 0)
    again = GroupRuntime(core, store)
    await again.start()  # a node loading the group
    try:
        worker = again.assignor_worker
        assert worker is not None  # primed, before any computation
        await primed(worker)
        loaded = again.core.group("g")
        assert isinstance(loaded, ConsumerGroup)
        mirror = worker._mirrors["g"]
        assert list(mirror.members) == ["m1", "m2"]
        assert all(mirror.targets[m] is t for m, t in loaded.target.frozen.items())
        # the next epoch's target is the inline one (m2 leaves; m1's next heartbeat computes
        # it: a departure only bumps the epoch, as Kafka's)
        await again.submit(ConsumerGroupHeartbeat("g", "m2", -1))
        await again.submit(ConsumerGroupHeartbeat("g", "m1", loaded.members["m1"].member_epoch))
        for _ in range(500):
            if loaded.target_epoch == loaded.group_epoch:
                break
            await asyncio.sleep(0.01)
        assert loaded.target.frozen == {"m1": (("id-t", (0, 1, 2, 3)),)}
    finally:
        await again.close()


async def test_a_failed_computation_and_a_dead_worker_are_reported_and_recovered_from() -> None:
    worker = AssignorWorker(asyncio.get_running_loop())
    try:
        group = Group(random.Random(7), "uniform")
        inputs = group.inputs()
        assert await computed_by(worker, replace(inputs, assignor="no-such-assignor")) is None
        assert same(await computed_by(worker, inputs), compute_target(inputs))
        process = worker._process
        assert process is not None
        process.kill()
        for _ in range(500):
            if worker._process is None:
                break
            await asyncio.sleep(0.01)
        assert worker._process is None  # its death was noticed
        group.change()
        again = group.inputs()  # a new worker, sent the whole group
        assert same(await computed_by(worker, again), compute_target(again))
    finally:
        await worker.close()


async def two_members_joined(runtime: GroupRuntime) -> ConsumerGroup:
    """Members m1 and m2 join group g over one topic of 4 partitions; returns the group once
    its target for both (epoch 3) is in place, or after 10 s."""
    runtime.topics_changed(TopicMetadata.of([TopicInfo("t", "id-t", 4)]))
    for member in ("m1", "m2"):
        await runtime.submit(join(member))
    group = runtime.core.group("g")
    assert isinstance(group, ConsumerGroup)
    for _ in range(1000):
        if group.target_epoch == 3:
            break
        await asyncio.sleep(0.01)
    return group


async def test_the_runtime_applies_the_worker_processs_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(epochs, "OFFLOAD_FROM", 0)
    config = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "0"})
    store = MemoryStore()
    runtime = GroupRuntime(GroupCoordinatorCore(config, SplitMix64(1)), store)
    await runtime.start()
    try:
        group = await two_members_joined(runtime)
        assert group.target_epoch == 3 and runtime.assignor_worker is not None
        assert group.target.frozen == {"m1": (("id-t", (0, 1)),), "m2": (("id-t", (2, 3)),)}
    finally:
        await runtime.close()
    # the target records the worker encoded went to the store as any record would
    durable = [record_codec.decode(row) for row in store.load()]
    for member_id, assignment in group.target.frozen.items():
        assert ConsumerGroupRecord("g", TargetMemberValue(member_id, assignment)) in durable


async def test_a_worker_that_cannot_run_is_given_up_for_the_assignor_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(epochs, "OFFLOAD_FROM", 0)
    monkeypatch.setattr(parent, "COMMAND", [sys.executable, "-c", "raise SystemExit(3)"])
    config = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "0"})
    runtime = GroupRuntime(GroupCoordinatorCore(config, SplitMix64(1)), MemoryStore())
    await runtime.start()
    try:
        group = await two_members_joined(runtime)
        # three workers died at once; the target was computed in the thread instead
        assert runtime.assignor_worker is not None and runtime.assignor_worker.broken
        assert group.target.frozen == {"m1": (("id-t", (0, 1)),), "m2": (("id-t", (2, 3)),)}
    finally:
        await runtime.close()
