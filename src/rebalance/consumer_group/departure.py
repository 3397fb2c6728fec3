"""Members leaving: a clean leave (epoch -1), a static member's temporary leave (-2), and the
timers that fence a member (session, rebalance timeout while revoking).

A removed member's partitions are free at once: its tombstones release them, and the group epoch
bumps; the next heartbeat of a remaining member re-targets the rest (as Kafka does).
"""

from __future__ import annotations

from rebalance.consumer_group import migration
from rebalance.consumer_group.commands import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeat,
)
from rebalance.consumer_group.epochs import maybe_bump
from rebalance.consumer_group.group import GROUP_TYPE, ConsumerGroup, ConsumerMember, MemberState
from rebalance.consumer_group.membership import static_holder
from rebalance.consumer_group.records import CurrentAssignmentValue
from rebalance.consumer_group.replay import remove_member, write
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.consumer_group.timers import (
    CONSUMER_CLASSIC_JOIN,
    CONSUMER_CLASSIC_SYNC,
    CONSUMER_SESSION,
    consumer_revocation_key,
    consumer_session_key,
)
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import ConsumerTrigger, EventType, ExpiryReason, LeaveReason
from rebalance.state import CoordinatorState
from rebalance.timers import TimerKey
from rebalance.topics import TopicMetadata


def leave(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    group: ConsumerGroup,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
) -> ConsumerGroupHeartbeatReply:
    """A heartbeat with epoch -1 (leave) or -2 (a static member's temporary leave)."""
    if cmd.member_epoch == STATIC_LEAVE_EPOCH:
        return _static_leave(state, result, group, cmd, now_ms)
    if cmd.instance_id is not None:
        # Kafka's `consumerGroupLeave`: a static member is found by its instance id, checked
        # as for a temporary leave (unknown: UNKNOWN_MEMBER_ID; another's: FENCED_INSTANCE_ID).
        leaving: ConsumerMember | None = group.members[static_holder(group, cmd)]
    else:
        leaving = group.members.get(cmd.member_id)
    if leaving is None:
        raise CoordinatorError(
            ErrorCode.UNKNOWN_MEMBER_ID,
            f"Member {cmd.member_id} is not a member of group {group.group_id}.",
        )
    fence(state, metadata, result, group, leaving, now_ms, None)
    return ConsumerGroupHeartbeatReply(
        ErrorCode.NONE, member_id=leaving.member_id, member_epoch=LEAVE_EPOCH
    )


def _static_leave(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
) -> ConsumerGroupHeartbeatReply:
    member = group.members[static_holder(group, cmd)]
    # A temporary leave: the member keeps its assigned partitions (nobody else gets them) until
    # it comes back under a new id or its session expires; those it was revoking are released
    # (Kafka's `consumerGroupStaticMemberGroupLeave` clears them: the client gave them up).
    current = member.current_value()
    write(
        state,
        result,
        group.group_id,
        CurrentAssignmentValue(
            member.member_id,
            STATIC_LEAVE_EPOCH,
            member.member_epoch if member.member_epoch >= 0 else member.previous_member_epoch,
            current.state,
            current.assigned,
            (),
            (),  # at the default epoch of -2, 0: Kafka's `resetAssignedPartitionsEpochsToZero`
        ),
    )
    state.cancel(result, consumer_revocation_key(group.group_id, member.member_id))
    result.event(
        EventType.MEMBER_LEFT,
        now_ms,
        group.group_id,
        group.group_epoch,
        member.member_id,
        group_type=GROUP_TYPE,
        reason=LeaveReason.LEAVE,
    )
    return ConsumerGroupHeartbeatReply(
        ErrorCode.NONE, member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH
    )


def fence(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    group: ConsumerGroup,
    member: ConsumerMember,
    now_ms: int,
    expiry: ExpiryReason | None,
) -> None:
    """Remove `member` (leave, session or revocation timeout) and bump the group epoch; or, if
    it was the last KIP-848 member among classic ones, convert the group back to a classic
    group (`migration`, Kafka's online downgrade).

    The new target is not computed here: as Kafka's `consumerGroupFenceMember` (removal records
    and the group epoch record only), the next heartbeat of a remaining member computes it
    (`heartbeat`: the target is behind the group epoch). Until then the group is Assigning; an
    emptied group's assignment epoch is written with the group epoch (Kafka 4.3, KAFKA-20442)."""
    downgrade = migration.downgrade_allowed(state, group, member.member_id)
    remove(state, result, group, member, now_ms, expiry)
    if downgrade:
        migration.to_classic(state, metadata, result, group, now_ms)
        return
    trigger = ConsumerTrigger.MEMBER_LEFT if expiry is None else ConsumerTrigger.MEMBER_EXPIRED
    maybe_bump(state, metadata, result, group, trigger, now_ms, retarget=False)


def remove(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    member: ConsumerMember,
    now_ms: int,
    expiry: ExpiryReason | None,
    reason: LeaveReason = LeaveReason.LEAVE,
) -> None:
    """Remove `member` without re-targeting (the caller bumps the epoch once for all)."""
    remove_member(state, result, group, member)
    state.cancel(result, consumer_session_key(group.group_id, member.member_id))
    state.cancel(result, consumer_revocation_key(group.group_id, member.member_id))
    state.cancel(result, (CONSUMER_CLASSIC_JOIN, group.group_id, member.member_id))
    state.cancel(result, (CONSUMER_CLASSIC_SYNC, group.group_id, member.member_id))
    if expiry is None:
        result.event(
            EventType.MEMBER_LEFT,
            now_ms,
            group.group_id,
            group.group_epoch,
            member.member_id,
            group_type=GROUP_TYPE,
            reason=reason,
        )
    else:
        result.event(
            EventType.MEMBER_EXPIRED,
            now_ms,
            group.group_id,
            group.group_epoch,
            member.member_id,
            group_type=GROUP_TYPE,
            reason=expiry,
        )


def expire(
    state: CoordinatorState,
    metadata: TopicMetadata,
    key: TimerKey,
    group: ConsumerGroup,
    now_ms: int,
) -> Result:
    """A member's session timer fired, its rebalance timeout while it still revokes, or a
    classic member's join or sync timeout."""
    kind, _, member_id = key
    result = Result()
    member = group.members.get(member_id)
    if member is None:
        return result
    if kind == CONSUMER_SESSION:
        fence(state, metadata, result, group, member, now_ms, ExpiryReason.SESSION_TIMEOUT)
    elif kind == CONSUMER_CLASSIC_JOIN:
        # A classic member told to rejoin (REBALANCE_IN_PROGRESS) that did not.
        fence(state, metadata, result, group, member, now_ms, ExpiryReason.REBALANCE_TIMEOUT)
    elif kind == CONSUMER_CLASSIC_SYNC:
        fence(state, metadata, result, group, member, now_ms, ExpiryReason.SYNC_TIMEOUT)
    elif member.state is MemberState.UNREVOKED_PARTITIONS:
        fence(state, metadata, result, group, member, now_ms, ExpiryReason.REVOCATION_TIMEOUT)
    return result
