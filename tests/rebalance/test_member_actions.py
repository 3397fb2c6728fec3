"""Every row of the error table, acted out: the member is put where that API's request is in
flight, is answered with the row's error, and must do what Kafka's Java client does."""

from __future__ import annotations

import pytest

from assignors.consumer_protocol import Assignment, encode_assignment
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupMember,
    JoinGroupReply,
    LeaveGroupReply,
    SyncGroupReply,
)
from rebalance.commands import OffsetCommit
from rebalance.errors import ErrorCode
from rebalance.member import (
    Action,
    Api,
    ClassicMember,
    ConsumerEmbedded,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    MemberConfig,
    MemberState,
    TopicsDescribed,
    action_for,
)
from rebalance.member.actions import DEFAULTS, ERROR_ACTIONS
from rebalance.replies import OffsetCommitReply

OWNED = frozenset({("t", 0), ("t", 1)})
BACKOFF = 100
CLASSIC_ROWS = [(api, code, action) for (api, code), action in ERROR_ACTIONS.items()
                if api is not Api.CONSUMER_GROUP_HEARTBEAT]  # fmt: skip


def stable(*, cooperative: bool = True) -> ClassicMember:
    """A member of generation 1 owning t-0 and t-1, led by itself; time is 0."""
    assignors = ("cooperative-sticky",) if cooperative else ("sticky",)
    m = ClassicMember(
        MemberConfig("g", session_timeout_ms=3000, heartbeat_interval_ms=1000,
                     retry_backoff_ms=BACKOFF),
        ConsumerEmbedded(("t",), assignors),
    )  # fmt: skip
    m.poll(0)
    m.on_reply(FindCoordinatorReply(ErrorCode.NONE, 1, "h", 1), 0)
    join = m.poll(0)
    assert isinstance(join, JoinGroup)
    meta = join.protocols[0][1]
    m.on_reply(JoinGroupReply(ErrorCode.NONE, 1, "consumer", assignors[0], "m", "m", False,
                              (JoinGroupMember("m", None, meta),)), 0)  # fmt: skip
    m.poll(0)
    m.on_reply(TopicsDescribed({"t": 2}), 0)
    sync = m.poll(0)
    assert isinstance(sync, SyncGroup)
    m.on_reply(SyncGroupReply(ErrorCode.NONE, dict(sync.assignments)["m"]), 0)
    assert m.state is MemberState.STABLE and not m.owned  # owned once a heartbeat confirms
    assert isinstance(m.poll(0), Heartbeat)
    m.on_reply(HeartbeatReply(ErrorCode.NONE), 0)
    assert m.owned == OWNED
    m.take_changes()
    m.changes_done()
    return m


def in_flight(api: Api) -> tuple[ClassicMember, object]:
    """A stable member with a request of `api` in flight at time 1000, and that request."""
    m = stable()
    request: object
    if api is Api.HEARTBEAT:
        request = m.poll(1000)
        assert isinstance(request, Heartbeat)
    elif api is Api.JOIN_GROUP:
        m._rejoin()
        request = m.poll(1000)
        assert isinstance(request, JoinGroup)
    elif api is Api.SYNC_GROUP:
        m._rejoin()
        m.poll(1000)
        m.on_reply(JoinGroupReply(ErrorCode.NONE, 2, "consumer", "cooperative-sticky", "other",
                                  "m"), 1000)  # fmt: skip
        request = m.poll(1000)
        assert isinstance(request, SyncGroup)
    elif api is Api.LEAVE_GROUP:
        m.close()
        assert m.poll(500) is None  # announces the revocation (no heartbeat due before 1000)
        m.take_changes()
        m.changes_done()
        request = m.poll(500)
        assert isinstance(request, LeaveGroup)
    else:
        request = m.commit({("t", 0): 5})
    return m, request


def answer(api: Api, code: ErrorCode) -> object:
    return {
        Api.JOIN_GROUP: JoinGroupReply(code, member_id="m-new" if code.value == 79 else "m"),
        Api.SYNC_GROUP: SyncGroupReply(code),
        Api.HEARTBEAT: HeartbeatReply(code),
        Api.LEAVE_GROUP: LeaveGroupReply(code),
        Api.OFFSET_COMMIT: OffsetCommitReply((("t", ((0, code),)),)),
    }[api]


def next_request(m: ClassicMember, now: int) -> object:
    """What the member sends next once its callbacks are done."""
    m.take_changes()
    m.changes_done()
    return m.poll(now)


@pytest.mark.parametrize(("api", "code", "action"), CLASSIC_ROWS,
                         ids=[f"{a.value}-{c.name}" for a, c, _ in CLASSIC_ROWS])  # fmt: skip
def test_error_row(api: Api, code: ErrorCode, action: Action) -> None:
    assert action_for(api, code) is action
    m, request = in_flight(api)
    generation, member_id = m.generation, m.member_id
    if api is Api.OFFSET_COMMIT:
        assert isinstance(request, OffsetCommit)
        outcome = m.on_commit_reply(request, answer(api, code))  # type: ignore[arg-type]
        assert not outcome.ok and outcome.action is action
        assert outcome.retriable == (action in (Action.RETRY_COMMIT, Action.REDISCOVER))
    else:
        m.on_reply(answer(api, code), 1000)  # type: ignore[arg-type]
    changes = m.take_changes()
    lost = [c for c in changes if isinstance(c, Lost)]
    m.changes_done()

    if action is Action.REJOIN:
        sent = m.poll(1000)
        assert isinstance(sent, JoinGroup) and not lost
        assert sent.member_id == ("m-new" if code is ErrorCode.MEMBER_ID_REQUIRED else member_id)
        assert m.generation == generation and m.owned == OWNED  # cooperative: kept
    elif action in (Action.RESET_GENERATION, Action.RESET_MEMBER_ID):
        assert lost == [Lost(OWNED, 1)] and not m.owned and m.generation == -1
        sent = m.poll(1000)
        assert isinstance(sent, JoinGroup)
        expected_id = "" if action is Action.RESET_MEMBER_ID else member_id
        assert m.member_id == sent.member_id == expected_id
    elif action is Action.REDISCOVER:
        assert m.coordinator is None
        if api is not Api.OFFSET_COMMIT:
            assert m.poll(1000 + BACKOFF - 1) is None
        assert isinstance(m.poll(1000 + BACKOFF), FindCoordinator)
    elif action is Action.BACKOFF:
        assert m.poll(1000 + BACKOFF - 1) is None
        assert type(m.poll(1000 + BACKOFF)) is type(request)
        assert m.owned == OWNED
    elif action is Action.FATAL:
        assert m.state is MemberState.FAILED and m.failure is not None
        assert m.failure.code is code and lost == [Lost(OWNED, 1)]
        assert m.poll(10_000) is None
    elif action is Action.IGNORE:
        assert m.state is MemberState.LEFT
    else:  # FAIL_COMMIT, RETRY_COMMIT: the membership is untouched
        assert m.state is MemberState.STABLE and m.owned == OWNED and not changes
        assert m.generation == generation


@pytest.mark.parametrize("api", [a for a in Api if a is not Api.CONSUMER_GROUP_HEARTBEAT])
def test_an_error_no_row_names_takes_the_apis_default(api: Api) -> None:
    code = ErrorCode.NOT_ENOUGH_REPLICAS
    assert (api, code) not in ERROR_ACTIONS
    assert action_for(api, code) is DEFAULTS[api]
    test_error_row(api, code, DEFAULTS[api])


def test_none_is_not_an_error() -> None:
    with pytest.raises(ValueError):
        action_for(Api.HEARTBEAT, ErrorCode.NONE)


def test_rebalance_in_progress_while_rejoining_is_ignored() -> None:
    m, _ = in_flight(Api.HEARTBEAT)
    m._rejoin()
    m.on_reply(HeartbeatReply(ErrorCode.REBALANCE_IN_PROGRESS), 1000)
    assert m.state is MemberState.STABLE  # the rejoin already requested is what happens


def test_a_stale_heartbeat_error_does_not_reset_a_newer_generation() -> None:
    m, _ = in_flight(Api.HEARTBEAT)
    m.generation = 2  # the member moved on while the heartbeat was in flight
    m.on_reply(HeartbeatReply(ErrorCode.ILLEGAL_GENERATION), 1000)
    assert m.generation == 2 and m.owned == OWNED


def test_a_stale_commit_error_does_not_reset_a_newer_generation() -> None:
    m, request = in_flight(Api.OFFSET_COMMIT)
    m.generation = 2
    assert isinstance(request, OffsetCommit)
    m.on_commit_reply(request, answer(Api.OFFSET_COMMIT, ErrorCode.UNKNOWN_MEMBER_ID))  # type: ignore[arg-type]
    assert m.member_id == "m" and m.owned == OWNED


def test_eager_rejoin_revokes_everything_first() -> None:
    m = stable(cooperative=False)
    m.poll(1000)
    m.on_reply(HeartbeatReply(ErrorCode.REBALANCE_IN_PROGRESS), 1000)
    assert m.poll(1000) is None  # the revocation is announced first
    (revoked,) = m.take_changes()
    assert revoked.partitions == OWNED and not m.owned
    m.changes_done()
    assert isinstance(m.poll(1000), JoinGroup)
    assert encode_assignment(Assignment(())) is not None
