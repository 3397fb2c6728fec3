"""The runtime computes offloaded target assignments off the loop (its assignor thread here; the
worker process in `assignor_worker/test_parent.py`): the loop answers heartbeats while the assignor
runs, and the target lands through the core as records."""

from __future__ import annotations

import asyncio
import threading

import pytest

from coordinator.groups.record_codec import decode
from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.memory import MemoryStore
from rebalance import CoordinatorConfig, GroupCoordinatorCore, SplitMix64
from rebalance.consumer_group import epochs, target
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.consumer_group.records import ConsumerGroupRecord, TargetEpochValue
from rebalance.topics import TopicInfo, TopicMetadata

CONFIG = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "0"})


def join(member: str) -> ConsumerGroupHeartbeat:
    return ConsumerGroupHeartbeat(
        "g", member, 0, rebalance_timeout_ms=30000, subscribed_topic_names=("t",),
        topic_partitions=(),
    )  # fmt: skip


async def test_the_assignor_runs_in_a_thread_while_heartbeats_are_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(epochs, "OFFLOAD_FROM", 0)
    release = threading.Event()
    threads: list[str] = []
    real = target.compute_target

    def slow(inputs: target.TargetInputs) -> target.ComputedTarget:
        threads.append(threading.current_thread().name)
        assert release.wait(10)
        return real(inputs)

    monkeypatch.setattr("coordinator.groups.target_offload.compute_target", slow)
    store = MemoryStore()
    runtime = GroupRuntime(
        GroupCoordinatorCore(CONFIG, SplitMix64(1)), store, assignor_worker="thread"
    )
    await runtime.start()
    try:
        runtime.topics_changed(TopicMetadata.of([TopicInfo("t", "id-t", 4)]))
        first = await runtime.submit(join("m1"))  # a group's first target: inline
        assert (first.member_epoch, first.assignment) == (2, (("id-t", (0, 1, 2, 3)),))
        second = await runtime.submit(join("m2"))  # epoch 3: to the assignor thread
        assert (second.member_epoch, second.assignment) == (2, ())
        group = runtime.core.group("g")
        assert isinstance(group, ConsumerGroup)
        for _ in range(3):  # the loop is free: m1 is answered, still at epoch 2
            beat = await runtime.submit(
                ConsumerGroupHeartbeat("g", "m1", 2, topic_partitions=first.assignment)
            )
            assert beat.member_epoch == 2 and group.kafka_state == "Assigning"
        release.set()
        for _ in range(100):
            if group.target_epoch == 3:
                break
            await asyncio.sleep(0.01)
        assert group.target_epoch == 3 and threads[0].startswith("assignor")
        revoke = await runtime.submit(
            ConsumerGroupHeartbeat("g", "m1", 2, topic_partitions=first.assignment)
        )
        assert revoke.assignment is not None and len(revoke.assignment[0][1]) == 2
    finally:
        release.set()
        await runtime.close()
    # The worker's target went to the store like any record: epoch 3 is durable.
    durable = [decode(row) for row in store.load()]
    assert ConsumerGroupRecord("g", TargetEpochValue(3)) in durable
