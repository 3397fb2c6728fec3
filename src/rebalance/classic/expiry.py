"""The classic group's timers (spec §1.5): session, pending member, join phase, pending sync.

Each function is what happens when its timer fires; the core has already dropped stale
firings (a deadline it no longer holds).
"""

from __future__ import annotations

from rebalance.classic.group import Group
from rebalance.classic.rebalance import complete_join, prepare_rebalance, remove_member
from rebalance.classic.timers import join_key
from rebalance.effects import Result
from rebalance.event_schema import ExpiryReason, Trigger
from rebalance.lifecycle import GroupState
from rebalance.state import CoordinatorState


def expire_session(state: CoordinatorState, group: Group, member_id: str, now_ms: int) -> Result:
    """A member's heartbeat/session timer fired (spec §1.5 heartbeat expiry)."""
    result = Result()
    member = group.members.get(member_id)
    if member is None:
        return result
    satisfied = not member.is_new and (
        member.join_token is not None or member.sync_token is not None
    )
    if satisfied:
        return result
    reason = ExpiryReason.NEW_MEMBER_TIMEOUT if member.is_new else ExpiryReason.SESSION_TIMEOUT
    remove_member(state, result, group, member_id, now_ms, reason)
    if group.can_rebalance():
        prepare_rebalance(
            state, result, group, now_ms, initial=False, trigger=Trigger.MEMBER_EXPIRED
        )
    elif group.state is GroupState.JOINING and group.all_members_joined():
        complete_join(state, result, group, now_ms)
    return result


def expire_pending(state: CoordinatorState, group: Group, member_id: str, now_ms: int) -> Result:
    """A MEMBER_ID_REQUIRED id never came back within its session timeout."""
    result = Result()
    if member_id not in group.pending_join:
        return result
    group.pending_join.discard(member_id)
    if group.state is GroupState.JOINING and group.all_members_joined():
        complete_join(state, result, group, now_ms)
    return result


def expire_join(state: CoordinatorState, group: Group, now_ms: int) -> Result:
    """The rebalance timeout or the initial delay elapsed."""
    result = Result()
    if group.state is not GroupState.JOINING:
        return result
    if group.initial_rebalance and group.new_member_added and group.initial_remaining_ms:
        # Extend by min(delay, remaining); note Kafka subtracts the *old* delay.
        delay = group.initial_delay_ms
        group.new_member_added = False
        group.initial_delay_ms = min(
            state.config.group_initial_rebalance_delay_ms, group.initial_remaining_ms
        )
        group.initial_remaining_ms = max(group.initial_remaining_ms - delay, 0)
        state.schedule(result, join_key(group.group_id), now_ms + group.initial_delay_ms)
        return result
    complete_join(state, result, group, now_ms)
    return result


def expire_sync(state: CoordinatorState, group: Group, now_ms: int) -> Result:
    """Kafka's pending-sync rule: members of the new generation that never sent SyncGroup
    within the rebalance timeout are removed and the group rebalances; members that synced
    (the leader included) stay and learn of it on their next heartbeat."""
    result = Result()
    if group.sync_generation != group.generation or group.state not in (
        GroupState.AWAITING_SYNC,
        GroupState.STABLE,
    ):
        return result
    group.sync_generation = -1
    if not group.pending_sync:
        return result
    for member_id in list(group.pending_sync):
        remove_member(state, result, group, member_id, now_ms, ExpiryReason.SYNC_TIMEOUT)
    prepare_rebalance(state, result, group, now_ms, initial=False, trigger=Trigger.SYNC_TIMEOUT)
    return result
