"""The pure KIP-848 member: joining, reconciling (revoke, then assign, then acknowledge), leaving,
commits with the member epoch, and every ConsumerGroupHeartbeat row of the error table."""

from __future__ import annotations

import pytest
from member_wiring import FAST

from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.errors import ErrorCode
from rebalance.member import (
    Action,
    Api,
    Assigned,
    CommitRefused,
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    MemberState,
    Revoked,
    TopicsDescribed,
    action_for,
)
from rebalance.member.actions import DEFAULTS, ERROR_ACTIONS
from rebalance.member.consumer import ConsumerMember, ConsumerMemberConfig
from rebalance.replies import OffsetCommitReply
from rebalance.testing import GroupHarness
from rebalance.topics import TopicInfo, TopicMetadata

ALL = frozenset(("t", p) for p in range(4))
ROWS = [(c, a) for (api, c), a in ERROR_ACTIONS.items() if api is Api.CONSUMER_GROUP_HEARTBEAT]


class Group:
    """Consumer members wired to the pure coordinator; callbacks return at once."""

    def __init__(self) -> None:
        self.harness = GroupHarness(FAST)
        topics = TopicMetadata.of([TopicInfo("t", "id-t", 4)])
        self.harness._absorb(self.harness.core.topics_changed(topics, 0))
        self.members: dict[str, ConsumerMember] = {}
        self.log: list[tuple[str, object]] = []

    def add(self, name: str, **options: object) -> ConsumerMember:
        config = ConsumerMemberConfig(
            "g",
            f"{name}-id",
            ("t",),
            session_timeout_ms=3000,
            rebalance_timeout_ms=5000,
            **options,  # type: ignore[arg-type]
        )
        self.members[name] = member = ConsumerMember(config)
        return member

    def settle(self, rounds: int = 50) -> None:
        for _ in range(rounds):
            moved = False
            for name, m in self.members.items():
                for change in m.take_changes():
                    self.log.append((name, change))
                    moved = True
                m.changes_done()
                request = m.poll(self.harness.clock.now_ms())
                if request is None:
                    continue
                moved = True
                if isinstance(request, FindCoordinator):
                    m.on_reply(FindCoordinatorReply(ErrorCode.NONE, 0, "c", 1), 0)
                elif isinstance(request, DescribeTopics):
                    m.on_reply(TopicsDescribed({"t": 4}, {"t": "id-t"}), 0)
                else:
                    token = self.harness.send(request)
                    m.on_reply(self.harness.replies[token], self.harness.clock.now_ms())  # type: ignore[arg-type]
                self.check()
            if not moved:
                return

    def advance(self, ms: int) -> None:
        self.harness.advance(ms)
        self.settle()

    def check(self) -> None:
        now = self.harness.clock.now_ms()
        owned = [m.owns(now) for m in self.members.values()]
        assert sum(len(o) for o in owned) == len(frozenset().union(*owned)), owned


def test_a_member_joins_with_epoch_zero_and_takes_the_assignment() -> None:
    group = Group()
    a = group.add("a")
    assert isinstance(a.poll(0), FindCoordinator)
    a.on_reply(FindCoordinatorReply(ErrorCode.NONE, 0, "c", 1), 0)
    first = a.poll(0)
    assert isinstance(first, ConsumerGroupHeartbeat)
    assert (first.member_id, first.member_epoch, first.subscribed_topic_names) == (
        "a-id",
        0,
        ("t",),
    )
    assert first.topic_partitions == () and a.state is MemberState.JOINING
    a.on_reply(group.harness.replies[group.harness.send(first)], 0)  # type: ignore[arg-type]
    assert a.state.name == "STABLE" and a.epoch == 2
    assert a.poll(0) == DescribeTopics(("t",))  # the assignment names topic ids
    a.on_reply(TopicsDescribed({"t": 4}, {"t": "id-t"}), 0)
    assert a.take_changes() == [Assigned(ALL, 2)]
    a.changes_done()
    ack = a.poll(0)  # sent at once, not after the interval: it acknowledges the assignment
    assert isinstance(ack, ConsumerGroupHeartbeat) and ack.topic_partitions == (
        ("id-t", (0, 1, 2, 3)),
    )


def test_a_regex_member_sends_its_regex_and_asks_for_every_topic_to_name_its_ids() -> None:
    group = Group()
    a = ConsumerMember(ConsumerMemberConfig("g", "a-id", (), topic_regex="t|u"))
    assert isinstance(a.poll(0), FindCoordinator)
    a.on_reply(FindCoordinatorReply(ErrorCode.NONE, 0, "c", 1), 0)
    join = a.poll(0)
    assert isinstance(join, ConsumerGroupHeartbeat)
    assert (join.subscribed_topic_names, join.subscribed_topic_regex) == (None, "t|u")
    a.on_reply(group.harness.replies[group.harness.send(join)], 0)  # type: ignore[arg-type]
    # it knows no topic names: the ids of the assignment are looked up among every topic
    assert a.poll(0) == DescribeTopics(None)
    a.on_reply(TopicsDescribed({"t": 4, "other": 1}, {"t": "id-t", "other": "id-o"}), 0)
    assert a.take_changes() == [Assigned(ALL, 2)]
    with pytest.raises(ValueError, match="not both"):
        ConsumerMemberConfig("g", "b-id", ("t",), topic_regex="t")


def test_a_second_member_gets_partitions_only_after_the_first_released_them() -> None:
    group = Group()
    group.add("a")
    group.settle()
    group.add("b")
    group.settle()
    group.advance(1000)
    group.advance(1000)
    a, b = group.members["a"], group.members["b"]
    assert len(a.owned) == len(b.owned) == 2 and a.owned | b.owned == ALL
    names = [(name, type(c).__name__) for name, c in group.log]
    revoked_at = names.index(("a", "Revoked"))
    b_assigned = [i for i, (n, kind) in enumerate(names) if n == "b" and kind == "Assigned"]
    assert b_assigned and min(b_assigned) > revoked_at
    assert a.epoch == b.epoch == 3


def test_leaving_revokes_then_sends_epoch_minus_one_or_minus_two_when_static() -> None:
    for instance, epoch in ((None, -1), ("i-1", -2)):
        group = Group()
        a = group.add("a", group_instance_id=instance)
        group.settle()
        a.close()
        assert a.poll(0) is None
        assert a.take_changes() == [Revoked(ALL, 2)]
        a.changes_done()
        leave = a.poll(0)
        assert isinstance(leave, ConsumerGroupHeartbeat) and leave.member_epoch == epoch
        a.on_reply(group.harness.replies[group.harness.send(leave)], 0)  # type: ignore[arg-type]
        assert a.state is MemberState.LEFT


def test_commits_carry_the_member_epoch() -> None:
    group = Group()
    a = group.add("a")
    with pytest.raises(CommitRefused):
        a.commit({("t", 0): 1})
    group.settle()
    request = a.commit({("t", 0): 10})
    assert (request.generation_id, request.member_id, request.version) == (2, "a-id", 9)
    reply = group.harness.replies[group.harness.send(request)]
    assert isinstance(reply, OffsetCommitReply)
    assert a.on_commit_reply(request, reply).ok
    stale = OffsetCommitReply((("t", ((0, ErrorCode.STALE_MEMBER_EPOCH),)),))
    outcome = a.on_commit_reply(request, stale)
    assert outcome.retriable and a.state is MemberState.STABLE


def stable_with_heartbeat_in_flight() -> tuple[Group, ConsumerMember]:
    group = Group()
    a = group.add("a", retry_backoff_ms=100)
    group.settle()
    group.harness.advance(1000)
    assert isinstance(a.poll(1000), ConsumerGroupHeartbeat)
    return group, a


@pytest.mark.parametrize(("code", "action"), ROWS, ids=[c.name for c, _ in ROWS])
def test_error_row(code: ErrorCode, action: Action) -> None:
    assert action_for(Api.CONSUMER_GROUP_HEARTBEAT, code) is action
    _, a = stable_with_heartbeat_in_flight()
    a.on_reply(ConsumerGroupHeartbeatReply(code), 1000)
    changes = a.take_changes()
    a.changes_done()
    if action is Action.RESET_GENERATION:  # transitionToFenced
        assert changes == [Lost(ALL, 2)] and a.state is MemberState.UNJOINED
        rejoin = a.poll(1000)
        assert isinstance(rejoin, ConsumerGroupHeartbeat)
        assert (rejoin.member_id, rejoin.member_epoch, rejoin.topic_partitions) == ("a-id", 0, ())
    elif action is Action.REDISCOVER:
        assert a.coordinator is None and a.poll(1099) is None
        assert isinstance(a.poll(1100), FindCoordinator)
    elif action is Action.BACKOFF:
        assert a.poll(1099) is None and a.owned == ALL
        assert isinstance(a.poll(1100), ConsumerGroupHeartbeat)
    else:
        assert action is Action.FATAL
        assert a.state is MemberState.FAILED and changes == [Lost(ALL, 2)]
        assert a.failure is not None and a.failure.code is code


def test_an_unlisted_heartbeat_error_is_fatal() -> None:
    assert DEFAULTS[Api.CONSUMER_GROUP_HEARTBEAT] is Action.FATAL
    test_error_row(ErrorCode.NOT_ENOUGH_REPLICAS, Action.FATAL)


def test_a_silent_coordinator_makes_the_partitions_lost_within_the_session() -> None:
    _, a = stable_with_heartbeat_in_flight()
    a.on_failure(1000)
    assert a.owns(2999) == ALL and a.owns(3000) == frozenset()
    a.poll(3000)
    assert a.take_changes() == [Lost(ALL, 2)] and a.state is MemberState.UNJOINED
