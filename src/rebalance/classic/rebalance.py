"""The rebalance verbs every classic request and timer drives (spec §1.5), and their helpers.

Named after Kafka's procedures:

* `prepare_rebalance`  STABLE/AWAITING_SYNC -> JOINING (arms the initial delay or the
  rebalance timeout, or completes at once when everybody is already waiting);
* `maybe_complete_join` / `complete_join`  JOINING -> AWAITING_SYNC (or -> STABLE when empty);
* `complete_sync`  AWAITING_SYNC -> STABLE once the leader's assignment is persisted;
* `remove_member`  a member goes (left, expired, replaced, shed), its parked requests answered.

Deliberate differences from Kafka (each marked `DIFFERS` where it is made):

* A member removed while its SyncGroup is parked gets UNKNOWN_MEMBER_ID for it (Kafka drops the
  sync future with the member): a reply that never comes would block every later response on
  that connection, which answers in request order.
* When the leader leaves, or a join completes without the leader, the new leader is drawn from
  the injected random source (Kafka takes hash-map order).
"""

from __future__ import annotations

from rebalance.classic.group import Group, Member, metadata_value
from rebalance.classic.records import GroupMetadataRecord
from rebalance.classic.replies import JoinGroupMember, JoinGroupReply, SyncGroupReply
from rebalance.classic.timers import join_key, session_key, sync_key
from rebalance.effects import Result
from rebalance.errors import ErrorCode
from rebalance.event_schema import EventType, ExpiryReason, LeaveReason, Trigger
from rebalance.lifecycle import GroupState
from rebalance.state import CoordinatorState

#: (An alias for `join_reply`, made once per member of a round: on Python 3.11 reading an enum
#: member goes through the enum class's `__getattr__` hook, four times a global's cost.)
_NONE = ErrorCode.NONE
_REMOVED_JOIN = JoinGroupReply(ErrorCode.UNKNOWN_MEMBER_ID)
_REMOVED_SYNC = SyncGroupReply(ErrorCode.UNKNOWN_MEMBER_ID)
_IN_PROGRESS_SYNC = SyncGroupReply(ErrorCode.REBALANCE_IN_PROGRESS)


def prepare_rebalance(
    state: CoordinatorState,
    result: Result,
    group: Group,
    now_ms: int,
    initial: bool,
    trigger: Trigger,
) -> None:
    """STABLE/AWAITING_SYNC -> JOINING. `initial`: the group had no members (Kafka: Empty).

    `trigger` names the cause for the event log (see `rebalance.events`).
    """
    result.event(
        EventType.REBALANCE_STARTED,
        now_ms,
        group.group_id,
        group.generation,
        trigger=trigger,
        members=group.generation_members,
    )
    if group.state is GroupState.AWAITING_SYNC:
        for member in group.members.values():
            member.assignment = b""
            if member.sync_token is not None:
                result.reply(member.sync_token, _IN_PROGRESS_SYNC)
                member.sync_token = None
    state.cancel(result, sync_key(group.group_id))
    group.pending_sync.clear()
    group.sync_generation = -1
    group.transition("begin_rebalance", now_ms)
    group.initial_rebalance = initial
    if initial:
        # Wait the full initial delay even if everybody has joined (spec §9 rule 1).
        delay = state.config.group_initial_rebalance_delay_ms
        group.new_member_added = False
        group.initial_delay_ms = delay
        group.initial_remaining_ms = max(group.max_rebalance_timeout_ms() - delay, 0)
        state.schedule(result, join_key(group.group_id), now_ms + delay)
        return
    if group.all_members_joined():
        complete_join(state, result, group, now_ms)
    else:
        state.schedule(result, join_key(group.group_id), now_ms + group.max_rebalance_timeout_ms())


def rebalance_or_complete(
    state: CoordinatorState,
    result: Result,
    group: Group,
    now_ms: int,
    trigger: Trigger,
    initial: bool = False,
) -> None:
    """After a member joined or changed: start a rebalance if the group may, else let a join
    phase that was waiting for this member complete."""
    if group.can_rebalance():
        prepare_rebalance(state, result, group, now_ms, initial=initial, trigger=trigger)
    else:
        maybe_complete_join(state, result, group, now_ms)


def maybe_complete_join(state: CoordinatorState, result: Result, group: Group, now_ms: int) -> None:
    if (
        group.state is GroupState.JOINING
        and not group.initial_rebalance
        and group.all_members_joined()
    ):
        complete_join(state, result, group, now_ms)


def complete_join(state: CoordinatorState, result: Result, group: Group, now_ms: int) -> None:
    """JOINING -> AWAITING_SYNC (a new generation), or -> STABLE when nobody is left."""
    state.cancel(result, join_key(group.group_id))
    for member in [m for m in group.members.values() if m.join_token is None]:
        if not member.is_static:  # static members keep their place (spec §2)
            remove_member(
                state,
                result,
                group,
                member.member_id,
                now_ms,
                ExpiryReason.REBALANCE_TIMEOUT,
                False,
            )
    joined = [m.member_id for m in group.joined_members()]
    if group.members and (group.leader_id is None or group.leader_id not in joined):
        if not joined:
            # Only static members that have not rejoined: wait another rebalance timeout.
            state.schedule(
                result, join_key(group.group_id), now_ms + group.max_rebalance_timeout_ms()
            )
            return
        group.leader_id = joined[state.rng.below(len(joined))]  # DIFFERS: random
    group.generation += 1
    group.generation_members = len(group.members)
    if not group.members:
        group.protocol_name = None
        group.leader_id = None
        group.transition("empty_out", now_ms)
        result.event(EventType.GROUP_EMPTY, now_ms, group.group_id, group.generation)
        state.apply(result, GroupMetadataRecord(group.group_id, metadata_value(group)))
        return
    group.protocol_name = protocol = group.select_protocol()
    group.transition("complete_join", now_ms)
    result.event(
        EventType.JOIN_COMPLETED,
        now_ms,
        group.group_id,
        group.generation,
        leader=group.leader_id,
        protocol=group.protocol_name,
        members=list(group.members),
        # Raw subscriptions: their owned partitions are read by the event writer, off the
        # request path (the report tells eager members from cooperative ones by them).
        protocol_type=group.protocol_type,
        subscriptions={m.member_id: m.metadata_for(protocol) for m in group.members.values()},
    )
    for member in group.members.values():
        token = group.unpark_join(member)
        if token is not None:
            result.reply(token, join_reply(group, member))
        member.is_new = False
        rearm_session(state, result, group, member, now_ms)
    group.pending_sync.add_all(group.members)
    group.sync_generation = group.generation
    state.schedule(result, sync_key(group.group_id), now_ms + group.max_rebalance_timeout_ms())


def complete_sync(
    state: CoordinatorState,
    result: Result,
    group: Group,
    assignments: dict[str, bytes],
    now_ms: int,
) -> None:
    """AWAITING_SYNC -> STABLE with the leader's assignment, persisted as one record.

    Members the leader left out get empty bytes; extra keys are ignored (spec §1.5).
    The record's replay is what sets each member's assignment.
    """
    group.transition("complete_sync", now_ms)
    value = metadata_value(group, assignments)
    state.apply(result, GroupMetadataRecord(group.group_id, value))
    # Raw bytes: decoding them for the log is the event writer's job, off the request path.
    result.event(
        EventType.SYNC_COMPLETED,
        now_ms,
        group.group_id,
        group.generation,
        protocol_type=group.protocol_type,
        assignments={m.member_id: m.assignment for m in value.members},
    )
    result.event(EventType.GROUP_STABLE, now_ms, group.group_id, group.generation)


def remove_member(
    state: CoordinatorState,
    result: Result,
    group: Group,
    member_id: str,
    now_ms: int,
    reason: LeaveReason | ExpiryReason,
    choose_leader: bool = True,
) -> None:
    """Remove a member, answering anything it has parked, and pick a new leader.

    A `LeaveReason` makes it a member_left event, an `ExpiryReason` a member_expired one.
    """
    kind = EventType.MEMBER_LEFT if isinstance(reason, LeaveReason) else EventType.MEMBER_EXPIRED
    member = group.members[member_id]
    # A session expiry fires one session timeout after the last heartbeat: the timeout lets the
    # event log tell when the member was last heard from (analytics' ownership table).
    silent = (
        {"session_timeout_ms": member.session_timeout_ms}
        if reason is ExpiryReason.SESSION_TIMEOUT
        else {}
    )
    result.event(kind, now_ms, group.group_id, group.generation, member_id, reason=reason, **silent)
    join_token = group.unpark_join(member)
    if join_token is not None:
        result.reply(join_token, _REMOVED_JOIN)
    if member.sync_token is not None:
        result.reply(member.sync_token, _REMOVED_SYNC)  # DIFFERS: Kafka drops it
        member.sync_token = None
    next_leader = None
    if choose_leader and group.leader_id == member_id and len(group.members) > 1:
        others = [m for m in group.members if m != member_id]
        next_leader = others[state.rng.below(len(others))]  # DIFFERS: random
    group.remove_member(member_id, next_leader)
    state.cancel(result, session_key(group.group_id, member_id))


def rearm_session(
    state: CoordinatorState, result: Result, group: Group, member: Member, now_ms: int
) -> None:
    state.schedule(
        result, session_key(group.group_id, member.member_id), now_ms + member.session_timeout_ms
    )


def join_reply(group: Group, member: Member, with_members: bool = True) -> JoinGroupReply:
    """The current generation as `member` sees it (the leader also gets everybody's metadata)."""
    members: tuple[JoinGroupMember, ...] = ()
    if with_members and group.leader_id == member.member_id:
        protocol = group.protocol_name or ""
        members = tuple(
            [
                JoinGroupMember(m.member_id, m.group_instance_id, m.metadata_for(protocol))
                for m in group.members.values()
            ]
        )
    # (Positional: a round makes one per member.)
    return JoinGroupReply(
        _NONE,  # ErrorCode.NONE
        group.generation,  # generation_id
        group.protocol_type,
        group.protocol_name,
        group.leader_id or "",  # leader
        member.member_id,
        False,  # skip_assignment
        members,
    )
