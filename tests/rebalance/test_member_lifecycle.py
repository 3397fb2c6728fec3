"""The pure classic member: its lifecycle table, and each protocol path against the pure core."""

from __future__ import annotations

import pytest
from member_wiring import Cluster, kinds

from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.replies import HeartbeatReply, JoinGroupReply
from rebalance.errors import ErrorCode, IllegalTransition
from rebalance.member import (
    Assigned,
    ClassicMember,
    CommitRefused,
    ConsumerEmbedded,
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    MemberConfig,
    MemberState,
    Revoked,
    lifecycle,
)
from rebalance.replies import OffsetCommitReply

S = MemberState
EDGES = {
    ("join", S.UNJOINED): S.JOINING,
    ("join", S.JOINING): S.JOINING,
    ("join", S.SYNCING): S.JOINING,
    ("join", S.STABLE): S.JOINING,
    ("joined", S.JOINING): S.SYNCING,
    ("synced", S.SYNCING): S.STABLE,
    ("synced", S.JOINING): S.STABLE,
    ("synced", S.STABLE): S.STABLE,
    ("reset", S.UNJOINED): S.UNJOINED,
    ("reset", S.JOINING): S.UNJOINED,
    ("reset", S.SYNCING): S.UNJOINED,
    ("reset", S.STABLE): S.UNJOINED,
    ("leave", S.UNJOINED): S.LEAVING,
    ("leave", S.JOINING): S.LEAVING,
    ("leave", S.SYNCING): S.LEAVING,
    ("leave", S.STABLE): S.LEAVING,
    ("left", S.LEAVING): S.LEFT,
    ("fail", S.UNJOINED): S.FAILED,
    ("fail", S.JOINING): S.FAILED,
    ("fail", S.SYNCING): S.FAILED,
    ("fail", S.STABLE): S.FAILED,
    ("fail", S.LEAVING): S.FAILED,
}


class Thing:
    def __init__(self, state: MemberState) -> None:
        self.state = state


@pytest.mark.parametrize("trigger", lifecycle.TRIGGERS)
@pytest.mark.parametrize("state", list(MemberState), ids=lambda s: s.name)
def test_every_trigger_in_every_state(trigger: str, state: MemberState) -> None:
    """The table, exhaustively: the listed edges move, every other pair raises and stays."""
    thing = Thing(state)
    expected = EDGES.get((trigger, state))
    if expected is None:
        assert not lifecycle.allowed(state, trigger)
        with pytest.raises(IllegalTransition):
            lifecycle.fire(thing, trigger)
        assert thing.state is state
    else:
        assert lifecycle.fire(thing, trigger) is expected


def test_left_and_failed_are_final() -> None:
    for state in (S.LEFT, S.FAILED):
        assert not any(lifecycle.allowed(state, t) for t in lifecycle.TRIGGERS)


def member(**settings: object) -> ClassicMember:
    options = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 1000} | settings
    return ClassicMember(MemberConfig("g", **options), ConsumerEmbedded(("t",)))  # type: ignore[arg-type]


def test_first_the_coordinator_then_the_two_step_join() -> None:
    m = member()
    assert isinstance(m.poll(0), FindCoordinator)
    assert m.poll(0) is None  # one request in flight
    m.on_reply(FindCoordinatorReply(ErrorCode.NONE, 1, "h", 9), 0)
    join = m.poll(0)
    assert isinstance(join, JoinGroup) and join.member_id == "" and m.state is S.JOINING
    m.on_reply(JoinGroupReply(ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1"), 0)
    again = m.poll(0)
    assert isinstance(again, JoinGroup) and again.member_id == "m-1"


def test_a_failed_find_coordinator_backs_off() -> None:
    m = member(retry_backoff_ms=50)
    m.poll(0)
    m.on_reply(FindCoordinatorReply(ErrorCode.COORDINATOR_NOT_AVAILABLE), 10)
    assert m.poll(59) is None
    assert m.next_wakeup_ms(11) == 60
    assert isinstance(m.poll(60), FindCoordinator)


def test_one_member_joins_syncs_and_heartbeats() -> None:
    c = Cluster({"t": 4})
    c.add("a")
    c.settle()
    a = c.members["a"]
    assert a.member.state is S.STABLE and a.member.generation == 1
    assert a.member.owned == {("t", p) for p in range(4)}
    assert a.log == [Assigned(frozenset(a.member.owned), 1)]
    assert a.member.next_wakeup_ms(c.now) == c.now + 1000
    c.run(1000)
    assert c.harness.reply(c.harness._next_token) == HeartbeatReply(ErrorCode.NONE)


def test_the_leader_asks_for_partition_counts_before_it_syncs() -> None:
    m = member()
    m.poll(0)
    m.on_reply(FindCoordinatorReply(ErrorCode.NONE, 1, "h", 9), 0)
    m.poll(0)
    from rebalance.classic.replies import JoinGroupMember

    meta = m.protocol.protocols(frozenset(), (), -1)[0][1]
    m.on_reply(
        JoinGroupReply(ErrorCode.NONE, 1, "consumer", "cooperative-sticky", "m", "m", False,
                       (JoinGroupMember("m", None, meta),)),
        0,
    )  # fmt: skip
    assert m.poll(0) == DescribeTopics(("t",))
    from rebalance.member import TopicsDescribed

    m.on_reply(TopicsDescribed({"t": 2}), 0)
    sync = m.poll(0)
    assert isinstance(sync, SyncGroup) and dict(sync.assignments).keys() == {"m"}


def test_eager_members_revoke_everything_before_rejoining() -> None:
    c = Cluster({"t": 4})
    c.add("a", assignors=("sticky",))
    c.settle()
    c.add("b", assignors=("sticky",))
    c.run(3000)
    a, b = c.members["a"], c.members["b"]
    assert kinds(a.log) == ["assigned", "revoked", "assigned"]
    assert a.log[1] == Revoked(frozenset(("t", p) for p in range(4)), 1)
    assert len(a.member.owned) == len(b.member.owned) == 2
    assert a.member.owned.isdisjoint(b.member.owned)


def test_cooperative_members_revoke_only_what_moves_then_rejoin() -> None:
    c = Cluster({"t": 4})
    c.add("a")
    c.settle()
    c.add("b")
    c.run(3000)
    a, b = c.members["a"], c.members["b"]
    # generation 2: a revokes what moves; nothing new for it, so no `on_assigned` (empty
    # changes are not announced); generation 3 hands the withheld partitions to b
    assert kinds(a.log) == ["assigned", "revoked"]
    moved = a.log[1].partitions
    assert len(moved) == 2 and moved == b.member.owned
    assert b.log == [Assigned(moved, 3)]  # withheld in 2, handed out in 3
    assert a.member.generation == b.member.generation == 3


def test_revocation_callbacks_finish_before_the_rejoin() -> None:
    """The JoinGroup waits until the revoked change is done; heartbeats do not."""
    c = Cluster({"t": 2})
    a = c.add("a", assignors=("range",))
    c.settle()
    a._rejoin()
    assert a.poll(c.now) is None  # it announced the revocation first
    (revoked,) = a.take_changes()
    assert isinstance(revoked, Revoked)
    assert a.commit({("t", 0): 5}).generation_id == 1  # revoked but callbacks running
    assert a.poll(c.now + 1000) == Heartbeat("g", 1, a.member_id, None)
    a.on_reply(HeartbeatReply(ErrorCode.NONE), c.now + 1000)
    a.changes_done()
    assert isinstance(a.poll(c.now + 1000), JoinGroup)


def test_commit_is_fenced_by_generation_and_ownership() -> None:
    c = Cluster({"t": 2})
    a = c.add("a")
    with pytest.raises(CommitRefused, match="not in a synced generation"):
        a.commit({("t", 0): 1})
    c.settle()
    assert c.commit("a", {("t", 0): 1}).topics == (("t", ((0, ErrorCode.NONE),)),)
    with pytest.raises(CommitRefused, match="not owned"):
        a.commit({("u", 0): 1})


def test_a_commit_racing_the_join_it_rejoins_for_is_retriable_and_resets_nothing() -> None:
    # Sent while the member rejoins (the coordinator takes commits until the join completes),
    # answered ILLEGAL_GENERATION because the join completed first: the JoinGroup under way
    # decides the membership; the commit is to be made again in the new generation.
    c = Cluster({"t": 2})
    a = c.add("a")
    c.settle()
    a._rejoin()
    assert isinstance(a.poll(c.now), JoinGroup)  # in flight
    request = a.commit({("t", 0): 3})
    illegal = OffsetCommitReply((("t", ((0, ErrorCode.ILLEGAL_GENERATION),)),))
    outcome = a.on_commit_reply(request, illegal)
    assert outcome.rebalancing and not outcome.ok
    assert a.state is S.JOINING and a.generation == 1 and a.owned  # nothing was reset


def test_close_revokes_then_leaves() -> None:
    c = Cluster({"t": 2})
    a = c.add("a")
    c.settle()
    a.close()
    request = a.poll(c.now)
    assert request is None and isinstance(a.take_changes()[0], Revoked)
    a.changes_done()
    leave = a.poll(c.now)
    assert isinstance(leave, LeaveGroup)
    assert a.state is S.LEAVING
    a.on_reply(c.answer(leave), c.now)
    assert a.state.name == "LEFT" and a.next_wakeup_ms(c.now) is None


def test_closing_during_sync_completes_the_rebalance_then_revokes_and_leaves() -> None:
    # Closed between JoinGroup and SyncGroup, the member syncs first: its `on_revoked` then
    # commits in the generation the coordinator is in (before the sync it could not: the
    # generation it joined is not synced, the one that gave its partitions is gone). Found by
    # the timing property earlier: waiting for the callbacks, it must not ask to be woken now.
    c = Cluster({"t": 2})
    a = c.add("a")
    c.settle()
    b = c.add("b")
    for _ in range(3):  # b finds the coordinator and joins; its JoinGroup waits for a
        request = b.poll(c.now)
        assert request is not None
        reply = c.answer(request)
        if isinstance(reply, int):
            break
        b.on_reply(reply, c.now)
    c.harness.advance(1000)
    for _ in range(2):  # a's heartbeat learns of the rebalance; its JoinGroup completes it
        request = a.poll(c.now)
        assert request is not None
        a.on_reply(c.answer(request), c.now)
    assert a.state is S.SYNCING and a.owned
    a.close()
    with pytest.raises(CommitRefused, match="rebalance in progress") as refused:
        a.commit({("t", 0): 1})
    assert refused.value.retriable and refused.value.code is ErrorCode.REBALANCE_IN_PROGRESS
    while a.state is S.SYNCING:  # the leader describes the topics, then syncs
        request = a.poll(c.now)
        assert request is not None
        a.on_reply(c.answer(request), c.now)
    heartbeat = a.poll(c.now)  # the revocation is announced; heartbeats go on meanwhile
    assert isinstance(heartbeat, Heartbeat) and heartbeat.generation_id == 2
    a.on_reply(c.answer(heartbeat), c.now)
    # what moves to b (the sync's), then the rest (the leave's)
    changes = a.take_changes()
    assert kinds(changes) == ["revoked", "revoked"]
    held = changes[0].partitions | changes[1].partitions
    assert held == frozenset(("t", p) for p in range(2))
    kept = sorted(held)[0]
    assert a.owns(c.now) == held  # owned until `on_revoked` returned
    assert c.commit("a", {kept: 5}).topics == ((kept[0], ((kept[1], ErrorCode.NONE),)),)
    wakeup = a.next_wakeup_ms(c.now)
    assert wakeup is None or wakeup > c.now
    a.changes_done()
    assert a.owns(c.now) == frozenset()
    assert a.next_wakeup_ms(c.now) == c.now
    assert isinstance(a.poll(c.now), LeaveGroup)


def test_a_static_member_does_not_send_leave_group() -> None:
    c = Cluster({"t": 2})
    a = c.add("a", group_instance_id="i-1")
    c.settle()
    a.close()
    c.settle()
    assert a.state is S.LEFT
    assert kinds(c.members["a"].log) == ["assigned", "revoked"]
    assert len(c.harness.core.groups()["g"].members) == 1  # no LeaveGroup: still a member


def test_session_loss_reports_partitions_lost_before_the_coordinator_can_move_them() -> None:
    c = Cluster({"t": 2})
    a = c.add("a")
    c.settle()
    a.poll(c.now + 1000)  # a heartbeat that is never answered
    a.on_failure(c.now + 1000)
    assert a.owned
    wakeup = a.next_wakeup_ms(c.now + 1000)
    assert wakeup is not None and wakeup <= c.now + 3000
    a.poll(c.now + 3000)
    assert isinstance(a.take_changes()[0], Lost) and not a.owned
    assert a.state is S.UNJOINED and a.member_id != ""


def test_a_member_failed_stays_failed() -> None:
    m = member()
    m.poll(0)
    m.on_reply(FindCoordinatorReply(ErrorCode.GROUP_AUTHORIZATION_FAILED), 0)
    assert m.state is S.FAILED and m.failure is not None and m.poll(100) is None
    with pytest.raises(Exception, match="GROUP_AUTHORIZATION_FAILED"):
        m.commit({})
