"""Assignment batching (Kafka 4.3, `group.consumer.assignment.interval.ms`, 1 s by default): the
epoch bumps within one interval share one target computation, done by the first heartbeat
after the interval; members meanwhile reconcile towards the last target."""

from __future__ import annotations

from consumer_harness import ConsumerHarness, topic_id

from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.event_schema import EventType

G = "g"
T = topic_id("t")


def targets(h: ConsumerHarness) -> list[int]:
    """The group epochs a target assignment was computed for, in order."""
    return [e.generation for e in h.events if e.type is EventType.TARGET_ASSIGNMENT]


def test_the_first_target_is_immediate_and_later_joins_wait_for_the_interval() -> None:
    h = ConsumerHarness(batching=True, t=6)
    assert h.config.group_consumer_assignment_interval_ms == 1000
    first = h.join(G, "m1")
    assert (first.member_epoch, first.assignment) == (2, ((T, (0, 1, 2, 3, 4, 5)),))
    h.advance(100)
    second = h.join(G, "m2")
    third = h.join(G, "m3")
    group = h.group(G)
    # Two joins, two epoch bumps, no new target yet: the joiners reconcile towards epoch 2's
    # target, in which they have nothing; the group is Assigning.
    assert (group.group_epoch, group.target_epoch, group.kafka_state) == (4, 2, "Assigning")
    assert (second.member_epoch, second.assignment) == (2, ())
    assert (third.member_epoch, third.assignment) == (2, ())
    h.advance(500)
    h.hb(ConsumerGroupHeartbeat(G, "m1", 2, topic_partitions=((T, (0, 1, 2, 3, 4, 5)),)))
    assert group.target_epoch == 2  # 600 ms since the last target: still waiting
    h.advance(400)
    revoke = h.hb(ConsumerGroupHeartbeat(G, "m1", 2, topic_partitions=((T, (0, 1, 2, 3, 4, 5)),)))
    # One computation for both joins, at the group epoch they reached.
    assert targets(h) == [2, 4]
    assert revoke.assignment is not None and len(revoke.assignment[0][1]) == 2


def test_a_batched_group_converges_with_one_target_per_interval() -> None:
    h = ConsumerHarness(batching=True, t=12)
    owned: dict[str, tuple[tuple[str, tuple[int, ...]], ...]] = {}
    epochs: dict[str, int] = {}
    for i in range(10):  # ten joins within 10 ms
        reply = h.join(G, f"m{i}")
        epochs[f"m{i}"] = reply.member_epoch
        owned[f"m{i}"] = reply.assignment or ()
        h.advance(1)
    for _ in range(4):  # every member heartbeats once a second
        h.advance(1000)
        for m in sorted(epochs):
            reply = h.hb(ConsumerGroupHeartbeat(G, m, epochs[m], topic_partitions=owned[m]))
            epochs[m] = reply.member_epoch
            if reply.assignment is not None:
                owned[m] = reply.assignment
    group = h.group(G)
    assert (group.group_epoch, group.kafka_state) == (11, "Stable")
    assert targets(h) == [2, 11]
    assert sorted(p for a in owned.values() for _, ps in a for p in ps) == list(range(12))


def test_interval_zero_computes_a_target_per_epoch_bump_as_kafka_4_0() -> None:
    config = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "0"})
    h = ConsumerHarness(config, batching=True, t=6)
    for m in ("m1", "m2", "m3"):
        h.join(G, m)
    assert targets(h) == [2, 3, 4]


def test_a_topic_dropped_from_the_subscription_is_revoked_before_the_next_target() -> None:
    """Kafka 4.1's reconciliation (KAFKA-19431): a member that stops subscribing to a topic
    gives its partitions up at once, at its epoch, even while the new target waits for the
    interval; a topic it no longer subscribes to is never in what it is given."""
    h = ConsumerHarness(batching=True, t=2, u=2)
    first = h.join(G, "m1", topics=("t", "u"))
    assert first.assignment == ((T, (0, 1)), (topic_id("u"), (0, 1)))
    h.advance(100)
    owned = ((T, (0, 1)), (topic_id("u"), (0, 1)))
    reply = h.hb(
        ConsumerGroupHeartbeat(G, "m1", 2, subscribed_topic_names=("t",), topic_partitions=owned)
    )
    group = h.group(G)
    assert (group.group_epoch, group.target_epoch) == (3, 2)  # the target waits
    member = group.members["m1"]
    assert (reply.member_epoch, reply.assignment) == (2, ((T, (0, 1)),))
    assert str(member.state) == "unrevoked_partitions"
    assert member.pending_revocation == {topic_id("u"): {0, 1}}
    revoked = h.hb(ConsumerGroupHeartbeat(G, "m1", 2, topic_partitions=((T, (0, 1)),)))
    assert (revoked.member_epoch, revoked.assignment) == (2, None)
    assert (str(member.state), member.pending_revocation) == ("stable", {})
    h.advance(1000)
    done = h.hb(ConsumerGroupHeartbeat(G, "m1", 2, topic_partitions=((T, (0, 1)),)))
    assert (done.member_epoch, group.target_epoch) == (3, 3)
    assert member.assigned == {T: {0, 1}}
