"""Heartbeat and LeaveGroup (spec §1.5, §2): members prove they are alive, or say goodbye.

A heartbeat re-arms the member's session timer and tells it whether a rebalance is under way;
a leave removes members (or, by instance id, static members: KIP-345 admin removal) and starts
a rebalance. A MEMBER_ID_REQUIRED id that leaves before joining is not a member: dropping it
never starts a rebalance, it may only let a waiting join phase complete (Kafka's
`removePendingMemberAndUpdateGroup`).
"""

from __future__ import annotations

from collections.abc import Hashable

from rebalance.classic.commands import Heartbeat, LeaveGroup
from rebalance.classic.group import Group
from rebalance.classic.rebalance import (
    maybe_complete_join,
    prepare_rebalance,
    rearm_session,
    remove_member,
)
from rebalance.classic.replies import HeartbeatReply, LeaveGroupReply, LeftMember
from rebalance.classic.timers import pending_key
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import LeaveReason, Trigger
from rebalance.lifecycle import GroupState
from rebalance.state import CoordinatorState


def heartbeat(state: CoordinatorState, cmd: Heartbeat, now_ms: int, token: Hashable) -> Result:
    result = Result()
    result.reply(token, HeartbeatReply(_heartbeat(state, result, cmd, now_ms)))
    return result


def _heartbeat(state: CoordinatorState, result: Result, cmd: Heartbeat, now_ms: int) -> ErrorCode:
    group = state.groups.get(cmd.group_id)
    if group is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    try:
        member = group.validate_member(cmd.member_id, cmd.group_instance_id)
    except CoordinatorError as exc:
        return exc.code
    if cmd.generation_id != group.generation:
        return ErrorCode.ILLEGAL_GENERATION
    if group.empty:
        return ErrorCode.UNKNOWN_MEMBER_ID
    rearm_session(state, result, group, member, now_ms)
    if group.state is GroupState.JOINING:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def leave(state: CoordinatorState, cmd: LeaveGroup, now_ms: int, token: Hashable) -> Result:
    result = Result()
    group = state.groups.get(cmd.group_id)
    if group is None:
        left = tuple(
            LeftMember(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
            for m in cmd.members
        )
        result.reply(token, LeaveGroupReply(ErrorCode.NONE, left))
        return result
    outcomes: list[LeftMember] = []
    removed_member = removed_pending = False
    for leaving in cmd.members:
        pending = leaving.member_id in group.pending_join
        code = _leave_one(
            state, result, group, leaving.member_id, leaving.group_instance_id, now_ms
        )
        outcomes.append(LeftMember(leaving.member_id, leaving.group_instance_id, code))
        removed_pending |= pending and code is ErrorCode.NONE
        removed_member |= not pending and code is ErrorCode.NONE
    # A pending member's leave (an id handed out, never joined) rebalances too, as Kafka 4.4's
    # maybePrepareRebalanceOrCompleteJoin does for every valid leave (checked against the
    # broker: a Stable or CompletingRebalance group moves to the next generation). An Empty
    # group's pending leave only completes the join, as before.
    rebalances = removed_member or (removed_pending and not group.empty)
    if rebalances and group.can_rebalance():
        prepare_rebalance(state, result, group, now_ms, initial=False, trigger=Trigger.MEMBER_LEFT)
    elif removed_member or removed_pending:
        maybe_complete_join(state, result, group, now_ms)
    result.reply(token, LeaveGroupReply(ErrorCode.NONE, tuple(outcomes)))
    return result


def _leave_one(
    state: CoordinatorState,
    result: Result,
    group: Group,
    member_id: str,
    instance_id: str | None,
    now_ms: int,
) -> ErrorCode:
    if member_id == "":
        # KIP-345 admin removal by instance id.
        target = group.static_members.get(instance_id) if instance_id is not None else None
        if target is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        remove_member(state, result, group, target, now_ms, LeaveReason.ADMIN_REMOVAL)
        return ErrorCode.NONE
    if member_id in group.pending_join:
        group.pending_join.discard(member_id)
        state.cancel(result, pending_key(group.group_id, member_id))
        return ErrorCode.NONE
    try:
        group.validate_member(member_id, instance_id)
    except CoordinatorError as exc:
        return exc.code
    remove_member(state, result, group, member_id, now_ms, LeaveReason.LEAVE)
    return ErrorCode.NONE
