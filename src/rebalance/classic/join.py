"""JoinGroup (spec §1.6, §2, §9): admit, update or replace a member, and rebalance.

The handler follows Kafka's `GroupMetadataManager.classicGroupJoin` shape: a validation ladder
of early returns, then one decision by state. New members without an id get one and, from v4,
must come back with it (KIP-394, MEMBER_ID_REQUIRED); static members (KIP-345) keep their place
across restarts by instance id.

Deliberate differences from Kafka (marked `DIFFERS`):

* A parked JoinGroup superseded by a newer one from the same member is answered with
  REBALANCE_IN_PROGRESS (Kafka never answers it): connections answer in request order, so a
  reply that never comes would block every later one.
* A static member replacing itself takes over its old id's place in the pending-sync set.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

from rebalance.classic.commands import JoinGroup
from rebalance.classic.group import Group, Member, metadata_value
from rebalance.classic.rebalance import (
    join_reply,
    maybe_complete_join,
    prepare_rebalance,
    rearm_session,
    rebalance_or_complete,
    remove_member,
)
from rebalance.classic.records import GroupMetadataRecord, GroupMetadataValue
from rebalance.classic.replies import JoinGroupReply, SyncGroupReply
from rebalance.classic.timers import pending_key, session_key
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import EventType, ExpiryReason, Trigger
from rebalance.lifecycle import GroupState
from rebalance.state import CoordinatorState

#: Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a new member with a parked join is
#: evicted after this long, whatever its session timeout.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

_SUPERSEDED_JOIN = JoinGroupReply(ErrorCode.REBALANCE_IN_PROGRESS)


def join(state: CoordinatorState, cmd: JoinGroup, now_ms: int, token: Hashable) -> Result:
    result = Result()
    group = state.groups.get(cmd.group_id)
    if cmd.member_id == "":
        if group is None:
            group = _create_group(state, result, cmd.group_id, now_ms)
    elif group is None:
        result.reply(token, JoinGroupReply(ErrorCode.UNKNOWN_MEMBER_ID, member_id=cmd.member_id))
        return result
    if not _accepts_joining_member(state, group, cmd.member_id):
        _kick_for_max_size(state, result, group, cmd.member_id, now_ms)
        result.reply(token, JoinGroupReply(ErrorCode.GROUP_MAX_SIZE_REACHED))
        return result
    try:
        # The protocol check precedes member validation (spec §9 rule 11).
        if not group.supports_protocols(cmd.protocol_type, cmd.protocols):
            raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if cmd.member_id == "":
            _join_new_member(state, result, group, cmd, now_ms, token)
        else:
            _join_existing_member(state, result, group, cmd, now_ms, token)
    except CoordinatorError as exc:
        echo = "" if cmd.member_id == "" else cmd.member_id
        result.reply(token, JoinGroupReply(exc.code, member_id=echo))
    return result


def _create_group(state: CoordinatorState, result: Result, group_id: str, now_ms: int) -> Group:
    # Kafka writes an empty GroupMetadata record for a group created by a join (spec §1.6 5).
    value = GroupMetadataValue(None, 0, None, None, now_ms, ())
    state.apply(result, GroupMetadataRecord(group_id, value))
    group = state.groups[group_id]
    assert isinstance(group, Group)
    return group


def _accepts_joining_member(state: CoordinatorState, group: Group, member_id: str) -> bool:
    """group.max.size (spec §1.6 step 2): counted by parked joins while JOINING."""
    limit = state.config.group_max_size
    if group.state is GroupState.JOINING:
        member = group.members.get(member_id)
        if member is not None and member.join_token is not None:
            return True
        return group.num_awaiting_join < limit
    if group.state is GroupState.AWAITING_SYNC or group.members:
        return member_id in group.members or len(group.members) < limit
    return True


def _kick_for_max_size(
    state: CoordinatorState, result: Result, group: Group, member_id: str, now_ms: int
) -> None:
    """A rejected id leaves the group: how members beyond a lowered max are shed."""
    if member_id in group.pending_join:
        group.pending_join.discard(member_id)
        state.cancel(result, pending_key(group.group_id, member_id))
    elif member_id in group.members:
        remove_member(state, result, group, member_id, now_ms, ExpiryReason.MAX_SIZE)


def _join_new_member(
    state: CoordinatorState,
    result: Result,
    group: Group,
    cmd: JoinGroup,
    now_ms: int,
    token: Hashable,
) -> None:
    if cmd.group_instance_id is not None:
        old_id = group.static_members.get(cmd.group_instance_id)
        new_id = f"{cmd.group_instance_id}-{state.rng.uuid4()}"
        if old_id is not None:
            _replace_static_member(state, result, group, old_id, new_id, cmd, now_ms, token)
        else:
            _add_member_and_rebalance(state, result, group, new_id, cmd, now_ms, token)
        return
    new_id = f"{cmd.client_id}-{state.rng.uuid4()}"
    if cmd.version >= 4:
        # KIP-394: hand out an id and wait for the member to come back with it.
        group.pending_join.add(new_id)
        state.schedule(result, pending_key(group.group_id, new_id), now_ms + cmd.session_timeout_ms)
        result.reply(token, JoinGroupReply(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
        return
    _add_member_and_rebalance(state, result, group, new_id, cmd, now_ms, token)


def _join_existing_member(
    state: CoordinatorState,
    result: Result,
    group: Group,
    cmd: JoinGroup,
    now_ms: int,
    token: Hashable,
) -> None:
    if cmd.member_id in group.pending_join:
        if cmd.group_instance_id is not None:
            # Kafka: IllegalStateException (a static member is never handed a pending id).
            raise CoordinatorError(ErrorCode.UNKNOWN_SERVER_ERROR, "pending id with instance")
        group.pending_join.discard(cmd.member_id)
        state.cancel(result, pending_key(group.group_id, cmd.member_id))
        _add_member_and_rebalance(state, result, group, cmd.member_id, cmd, now_ms, token)
        return
    member = group.validate_member(cmd.member_id, cmd.group_instance_id)
    if group.state is GroupState.JOINING:
        _update_member_and_rebalance(state, result, group, member, cmd, now_ms, token)
    elif group.state is GroupState.AWAITING_SYNC:
        if member.matches(cmd.protocols):
            # Lost the reply? Answer for the current generation again.
            result.reply(token, join_reply(group, member))
        else:
            _update_member_and_rebalance(state, result, group, member, cmd, now_ms, token)
    elif group.state is GroupState.STABLE and group.members:
        if group.is_leader(member.member_id) or not member.matches(cmd.protocols):
            _update_member_and_rebalance(state, result, group, member, cmd, now_ms, token)
        else:
            # An unchanged follower: current generation, no rebalance, timeouts unchanged.
            result.reply(token, join_reply(group, member, with_members=False))
    else:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)


def _member_joined_event(
    result: Result, group: Group, member: Member, cmd: JoinGroup, now_ms: int
) -> None:
    result.event(
        EventType.MEMBER_JOINED,
        now_ms,
        group.group_id,
        group.generation,
        member.member_id,
        client_id=member.client_id,
        instance_id=member.group_instance_id,
        protocols=[name for name, _ in cmd.protocols],
    )


def _add_member_and_rebalance(
    state: CoordinatorState,
    result: Result,
    group: Group,
    member_id: str,
    cmd: JoinGroup,
    now_ms: int,
    token: Hashable,
) -> None:
    was_empty = group.empty
    member = Member.from_join(member_id, cmd, token)
    if group.state is GroupState.JOINING and group.initial_rebalance:
        group.new_member_added = True
    group.add_member(member)
    _member_joined_event(result, group, member, cmd, now_ms)
    state.schedule(
        result, session_key(group.group_id, member_id), now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
    )
    rebalance_or_complete(state, result, group, now_ms, Trigger.MEMBER_JOINED, initial=was_empty)


def _update_member_and_rebalance(
    state: CoordinatorState,
    result: Result,
    group: Group,
    member: Member,
    cmd: JoinGroup,
    now_ms: int,
    token: Hashable,
) -> None:
    unchanged = member.matches(cmd.protocols)
    _apply_join(group, member, cmd, unchanged)
    superseded = group.park_join(member, token, cmd.version)
    if superseded is not None:
        result.reply(superseded, _SUPERSEDED_JOIN)  # DIFFERS: Kafka never answers it
    if group.is_leader(member.member_id):
        trigger = Trigger.LEADER_REJOINED
    else:
        trigger = Trigger.MEMBER_REJOINED if unchanged else Trigger.METADATA_CHANGED
    rebalance_or_complete(state, result, group, now_ms, trigger)


def _apply_join(group: Group, member: Member, cmd: JoinGroup, unchanged: bool = False) -> None:
    """What a rejoin changes: protocols and timeouts (client id and host stay). `unchanged`:
    the member's protocols equal the command's (`Member.matches`), and stay as they are."""
    if not unchanged:
        group.update_protocols(member, cmd.protocols)
    member.rebalance_timeout_ms = cmd.rebalance_timeout_ms
    member.session_timeout_ms = cmd.session_timeout_ms


def _replace_static_member(
    state: CoordinatorState,
    result: Result,
    group: Group,
    old_id: str,
    new_id: str,
    cmd: JoinGroup,
    now_ms: int,
    token: Hashable,
) -> None:
    """A static member restarted with an empty id takes over its old id (KIP-345)."""
    old_leader = group.leader_id
    old = group.members[old_id]
    # Fence the old incarnation's parked requests.
    old_join = group.unpark_join(old)
    if old_join is not None:
        result.reply(old_join, JoinGroupReply(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
    if old.sync_token is not None:
        result.reply(old.sync_token, SyncGroupReply(ErrorCode.FENCED_INSTANCE_ID))
        old.sync_token = None
    was_pending_sync = old_id in group.pending_sync
    result.event(
        EventType.MEMBER_EXPIRED,
        now_ms,
        group.group_id,
        group.generation,
        old_id,
        reason=ExpiryReason.REPLACED,
    )
    group.remove_member(old_id, next_leader=None)
    state.cancel(result, session_key(group.group_id, old_id))
    # Kafka keeps the old client id and host, timeouts, protocols and assignment.
    member = replace(old, member_id=new_id, is_new=False, join_version=0)
    _member_joined_event(result, group, member, cmd, now_ms)
    group.add_member(member)
    if old_leader == old_id:
        group.leader_id = new_id
    if was_pending_sync:  # DIFFERS: see module docstring
        group.pending_sync.add(new_id)
    rearm_session(state, result, group, member, now_ms)
    # Then behave like an update of the new member.
    _apply_join(group, member, cmd)
    group.park_join(member, token, cmd.version)
    if group.state is GroupState.STABLE:
        if group.select_protocol() == group.protocol_name:
            _answer_static_rejoin_without_rebalance(state, result, group, member, old_leader)
        else:
            prepare_rebalance(
                state, result, group, now_ms, initial=False, trigger=Trigger.STATIC_REPLACED
            )
    elif group.state is GroupState.AWAITING_SYNC:
        # The old id may already be in the leader's assignment: rebalance.
        prepare_rebalance(
            state, result, group, now_ms, initial=False, trigger=Trigger.STATIC_REPLACED
        )
    else:
        maybe_complete_join(state, result, group, now_ms)


def _answer_static_rejoin_without_rebalance(
    state: CoordinatorState,
    result: Result,
    group: Group,
    member: Member,
    old_leader: str | None,
) -> None:
    state.apply(result, GroupMetadataRecord(group.group_id, metadata_value(group)))
    token = group.unpark_join(member)
    assert token is not None
    is_leader = group.is_leader(member.member_id)
    if member.join_version >= 9:
        # KIP-814: the replaced leader learns it leads but must not reassign.
        reply = replace(
            join_reply(group, member, with_members=is_leader), skip_assignment=is_leader
        )
    else:
        # Before v9 the old leader id is returned, so a replaced leader does not assign.
        reply = JoinGroupReply(
            ErrorCode.NONE,
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=old_leader or "",
            member_id=member.member_id,
        )
    result.reply(token, reply)
