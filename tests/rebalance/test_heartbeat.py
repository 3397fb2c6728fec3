"""Heartbeat conformance: spec §1.9, §9 rule 8, §1.11 Heartbeat rows."""

from __future__ import annotations

from rebalance.classic.commands import Heartbeat
from rebalance.classic.replies import HeartbeatReply
from rebalance.classic.timers import session_key
from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness

G = "g"


def test_heartbeat_unknown_group_is_unknown_member() -> None:
    """§1.9: group absent -> UNKNOWN_MEMBER_ID."""
    h = GroupHarness()
    assert h.heartbeat(G, "m", 0) is ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_checks_member_before_generation() -> None:
    """§9 rule 8: member first: an unknown member with a wrong generation -> UNKNOWN_MEMBER_ID."""
    h = GroupHarness()
    h.form_group(G, 1)
    assert h.heartbeat(G, "ghost", 99) is ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_checks_generation_before_state() -> None:
    """§9 rule 8 / §1.9: in PreparingRebalance the current generation gets
    REBALANCE_IN_PROGRESS, a stale one ILLEGAL_GENERATION."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    h.join(G, leader)
    assert h.heartbeat(G, follower, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat(G, follower, generation - 1) is ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat(G, follower, generation + 1) is ErrorCode.ILLEGAL_GENERATION


def test_heartbeat_in_completing_rebalance_and_stable_is_none() -> None:
    """§9 rule 8: CompletingRebalance -> NONE; Stable -> NONE; wrong generation -> 22."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(2)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    generation = replies[0].generation_id
    for reply in replies:
        assert h.heartbeat(G, reply.member_id, generation) is ErrorCode.NONE
        assert h.heartbeat(G, reply.member_id, generation - 1) is ErrorCode.ILLEGAL_GENERATION
    leader = replies[0].leader
    h.sync(G, leader, generation, {})
    assert h.heartbeat(G, leader, generation) is ErrorCode.NONE


def test_heartbeat_in_empty_group_is_unknown_member() -> None:
    """§9 rule 8: Empty -> UNKNOWN_MEMBER_ID (the member is gone)."""
    h = GroupHarness()
    (member,), generation = h.form_group(G, 1)
    h.leave(G, member)
    assert h.heartbeat(G, member, generation + 1) is ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_rearms_session_in_every_live_state() -> None:
    """§1.4: every accepted Heartbeat in PR/CR/S re-arms the session timer to S_m."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    h.advance(4000)
    h.heartbeat(G, follower, generation)
    assert h.timer.deadline(session_key(G, follower)) == h.clock.now_ms() + 10_000
    h.join(G, leader)  # PR
    h.advance(4000)
    assert h.heartbeat(G, follower, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.timer.deadline(session_key(G, follower)) == h.clock.now_ms() + 10_000


def test_rejected_heartbeat_does_not_rearm() -> None:
    """§1.9: only accepted heartbeats re-arm; a stale generation does not."""
    h = GroupHarness()
    (_, follower), generation = h.form_group(G, 2)
    deadline = h.timer.deadline(session_key(G, follower))
    h.advance(1000)
    assert h.heartbeat(G, follower, generation - 1) is ErrorCode.ILLEGAL_GENERATION
    assert h.timer.deadline(session_key(G, follower)) == deadline


def test_heartbeat_static_instance_checks() -> None:
    """§2 / §9 rule 14: unknown instance id -> UNKNOWN_MEMBER_ID; instance mapped to another
    member id -> FENCED_INSTANCE_ID."""
    h = GroupHarness()
    (member,), generation = h.form_group(G, 0, instance_ids=["i1"])
    assert h.heartbeat(G, member, generation, "i1") is ErrorCode.NONE
    assert h.heartbeat(G, member, generation, "i2") is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(G, "someone-else", generation, "i1") is ErrorCode.FENCED_INSTANCE_ID


def test_heartbeat_while_loading_is_none_and_unowned_is_not_coordinator() -> None:
    """§1.9 pre-checks / §9 rule 8: while the partition loads -> NONE (blind OK);
    not owned -> NOT_COORDINATOR; empty group id -> INVALID_GROUP_ID."""
    h = GroupHarness()
    partition = h.core.partition_for(G)
    h.core.unload(partition, h.clock.now_ms())
    assert h.heartbeat(G, "m", 1) is ErrorCode.NOT_COORDINATOR
    h.core.begin_load(partition)
    assert h.heartbeat(G, "m", 1) is ErrorCode.NONE
    token = h.send(Heartbeat("", 1, "m"))
    reply = h.reply(token)
    assert isinstance(reply, HeartbeatReply) and reply.error is ErrorCode.INVALID_GROUP_ID


def test_heartbeat_does_not_count_as_sync() -> None:
    """§1.9: heartbeats do not remove a member from pendingSync; §9 rule 9: the non-syncer is
    evicted after R even though it heartbeats, and a rebalance starts."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(2)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    leader = replies[0].leader
    follower = next(r.member_id for r in replies if r.member_id != leader)
    generation = replies[0].generation_id
    h.sync(G, leader, generation, {})
    for _ in range(6):  # 30 s of heartbeats, every 5 s
        h.advance(5000)
        h.heartbeat(G, leader, generation)
        h.heartbeat(G, follower, generation)
    group = h.core.group(G)
    assert group is not None
    assert follower not in group.members
    assert group.kafka_state == "PreparingRebalance"
