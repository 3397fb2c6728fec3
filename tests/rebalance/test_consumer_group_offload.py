"""Targets computed off the loop (`group.consumer.assignor.offload.enable`): the core hands a
large group's target to the shell as `TargetInputs` and keeps answering heartbeats; the result
comes back through `target_computed` and is applied only if its group epoch is still current.

The harness holds the offloaded computations (`hold_offloaded`) to play a slow worker; the size
from which a target is offloaded is lowered so that small groups show it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from consumer_harness import ConsumerHarness, topic_id

from rebalance.consumer_group import epochs
from rebalance.consumer_group.commands import STATIC_LEAVE_EPOCH, ConsumerGroupHeartbeat
from rebalance.consumer_group.target import compute_target, target_inputs
from rebalance.event_schema import EventType

G = "g"
T = topic_id("t")


@pytest.fixture(autouse=True)
def offload_everything(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(epochs, "OFFLOAD_FROM", 0)
    yield


def slow_worker(**topics: int) -> ConsumerHarness:
    h = ConsumerHarness(**topics)
    h.hold_offloaded = True
    return h


def targets(h: ConsumerHarness) -> list[int]:
    return [e.generation for e in h.events if e.type is EventType.TARGET_ASSIGNMENT]


ALL = ((T, (0, 1, 2, 3)),)


def test_the_first_target_is_inline_so_no_member_is_left_at_epoch_zero() -> None:
    h = slow_worker(t=4)
    assert h.join(G, "m1").member_epoch == 2 and h.offloaded == []


def test_heartbeats_are_answered_while_the_target_is_computed_elsewhere() -> None:
    h = slow_worker(t=4)
    h.join(G, "m1")
    second = h.join(G, "m2")
    # Epoch 3's target is in the worker: m2 is in, at epoch 2 with nothing; m1 keeps consuming.
    assert (second.member_epoch, second.assignment) == (2, ())
    group = h.group(G)
    assert (group.group_epoch, group.target_epoch, group.kafka_state) == (3, 2, "Assigning")
    assert [i.group_epoch for i in h.offloaded] == [3]
    h.advance(5000)
    again = h.hb(ConsumerGroupHeartbeat(G, "m1", 2, topic_partitions=ALL))
    assert (again.member_epoch, again.assignment) == (2, None)
    assert len(h.offloaded) == 1  # one computation at a time
    h.deliver_offloaded()
    assert (group.target_epoch, targets(h)) == (3, [2, 3])
    revoke = h.hb(ConsumerGroupHeartbeat(G, "m1", 2, topic_partitions=ALL))
    assert revoke.assignment is not None and len(revoke.assignment[0][1]) == 2


def test_a_stale_result_is_dropped_and_the_current_epoch_computed_at_once() -> None:
    h = slow_worker(t=6)
    h.join(G, "m1")
    h.join(G, "m2")
    h.join(G, "m3")  # group epoch 4 while epoch 3's target is being computed
    assert [i.group_epoch for i in h.offloaded] == [3]
    stale = h.offloaded.pop(0)
    h._absorb(h.core.target_computed(stale, compute_target(stale), h.clock.now_ms()))
    group = h.group(G)
    assert (group.target_epoch, targets(h)) == (2, [2])  # epoch 3 is gone: not applied
    assert [i.group_epoch for i in h.offloaded] == [4]  # the current epoch, started at once
    h.deliver_offloaded()
    assert (group.target_epoch, targets(h)) == (4, [2, 4])
    assert sorted(sum(map(len, t.values())) for t in group.target.values()) == [2, 2, 2]


def test_the_offloaded_target_is_the_inline_one() -> None:
    inline = ConsumerHarness(t=7, u=5)
    offloaded = slow_worker(t=7, u=5)
    for h in (inline, offloaded):
        for m, topics in (("a", ("t",)), ("b", ("t", "u")), ("c", ("u",))):
            h.join(G, m, topics)
            h.deliver_offloaded()
    assert offloaded.group(G).target == inline.group(G).target
    assert offloaded.group(G).target_epoch == inline.group(G).target_epoch == 4


def test_a_static_member_replaced_meanwhile_gets_its_instances_target() -> None:
    h = slow_worker(t=4)
    h.join(G, "s1", instance_id="i1")
    h.deliver_offloaded()
    h.hb(ConsumerGroupHeartbeat(G, "s1", 2, instance_id="i1", topic_partitions=ALL))
    h.join(G, "m2")  # epoch 2: its target is computed for members s1 and m2
    h.hb(ConsumerGroupHeartbeat(G, "s1", STATIC_LEAVE_EPOCH, instance_id="i1"))
    h.join(G, "s1-again", instance_id="i1")  # the replacement keeps the group epoch
    group = h.group(G)
    assert group.group_epoch == 3 and "s1" not in group.members
    h.deliver_offloaded()
    assert group.target_epoch == 3
    assert set(group.target) == {"s1-again", "m2"}
    assert sum(len(ps) for t in group.target.values() for ps in t.values()) == 4


def test_a_result_for_a_group_reloaded_meanwhile_is_ignored() -> None:
    h = slow_worker(t=4)
    h.join(G, "m1")
    h.join(G, "m2")
    inputs = h.offloaded.pop(0)
    h.failover()  # a new core loads the group: nothing in flight there
    h.hold_offloaded = True
    result = h.core.target_computed(inputs, compute_target(inputs), h.clock.now_ms())
    assert result.records == [] and result.offloaded == []


def test_inputs_are_a_copy_the_group_can_move_on_from() -> None:
    h = ConsumerHarness(t=4)
    h.join(G, "m1")
    group = h.group(G)
    inputs = target_inputs(group, h.core.group_types["consumer"].metadata, h.config)
    h.join(G, "m2")
    assert [m.member_id for m in inputs.members] == ["m1"]
    assert inputs.group_epoch == 2 and inputs.targets["m1"] == ((T, (0, 1, 2, 3)),)
