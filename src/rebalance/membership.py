"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and the rebalance verbs they drive.

Each handler follows the same shape (Kafka's `GroupMetadataManager`, kfake's `handleJoin`): a
validation ladder of early returns, then one decision by state. The verbs that move a group
through its lifecycle are named after Kafka's procedures (spec §1.5):

* `prepare_rebalance`  STABLE/AWAITING_SYNC -> JOINING (arms the initial delay or the
  rebalance timeout, or completes at once when everybody is already waiting);
* `maybe_complete_join` / `complete_join`  JOINING -> AWAITING_SYNC (or -> STABLE when empty);
* `complete_sync`  AWAITING_SYNC -> STABLE once the leader's assignment is persisted;
* `expire_*`  the timers: session, pending member, join (rebalance/initial delay), pending sync.

Deliberate differences from Kafka (each marked `DIFFERS` below):

* A parked JoinGroup or SyncGroup that is superseded by a newer one from the same member is
  answered with REBALANCE_IN_PROGRESS (Kafka never answers it). A reply that never comes would
  block every later response on that connection, which answers in request order.
* A member removed while its SyncGroup is parked gets UNKNOWN_MEMBER_ID for it, for the same
  reason (Kafka drops the sync future with the member).
* When the leader leaves, or a join completes without the leader, the new leader is drawn from
  the injected random source (Kafka takes hash-map order). Protocol-vote ties go to the protocol
  that received a vote first, in member join order.
* A static member replacing itself takes over its old id's place in the pending-sync set.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

from rebalance.commands import Heartbeat as HeartbeatCommand
from rebalance.commands import JoinGroup, LeaveGroup, SyncGroup
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.group import Group, Member
from rebalance.lifecycle import GroupState, fire
from rebalance.records import (
    GroupMetadataRecord,
    GroupMetadataValue,
    Result,
    join_key,
    pending_key,
    session_key,
    sync_key,
)
from rebalance.replies import (
    HeartbeatReply,
    JoinGroupMember,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    SyncGroupReply,
)
from rebalance.state import CoordinatorState, metadata_value

#: Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a new member with a parked join is
#: evicted after this long, whatever its session timeout.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

_SUPERSEDED_JOIN = JoinGroupReply(ErrorCode.REBALANCE_IN_PROGRESS)
_SUPERSEDED_SYNC = SyncGroupReply(ErrorCode.REBALANCE_IN_PROGRESS)
_REMOVED_JOIN = JoinGroupReply(ErrorCode.UNKNOWN_MEMBER_ID)
_REMOVED_SYNC = SyncGroupReply(ErrorCode.UNKNOWN_MEMBER_ID)
_IN_PROGRESS_SYNC = SyncGroupReply(ErrorCode.REBALANCE_IN_PROGRESS)


class Membership:
    """The classic group protocol over a `CoordinatorState`."""

    __slots__ = ("state",)

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state

    # =========================================================================== JoinGroup
    def join(self, cmd: JoinGroup, now_ms: int, token: Hashable) -> Result:
        result = Result()
        group = self.state.groups.get(cmd.group_id)
        if cmd.member_id == "":
            if group is None:
                group = self._create_group(result, cmd.group_id, now_ms)
        elif group is None:
            result.reply(
                token, JoinGroupReply(ErrorCode.UNKNOWN_MEMBER_ID, member_id=cmd.member_id)
            )
            return result
        if not self._accepts_joining_member(group, cmd.member_id):
            self._kick_for_max_size(result, group, cmd.member_id, now_ms)
            result.reply(token, JoinGroupReply(ErrorCode.GROUP_MAX_SIZE_REACHED))
            return result
        try:
            # Both paths check these first; the protocol check precedes member validation
            # (spec §9 rule 11).
            if group.state is GroupState.DOWN:
                raise CoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            names = [name for name, _ in cmd.protocols]
            if not group.supports_protocols(cmd.protocol_type, names):
                raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if cmd.member_id == "":
                self._join_new_member(result, group, cmd, now_ms, token)
            else:
                self._join_existing_member(result, group, cmd, now_ms, token)
        except CoordinatorError as exc:
            echo = "" if cmd.member_id == "" else cmd.member_id
            result.reply(token, JoinGroupReply(exc.code, member_id=echo))
        return result

    def _create_group(self, result: Result, group_id: str, now_ms: int) -> Group:
        # Kafka writes an empty GroupMetadata record for a group created by a join (spec §1.6 5).
        value = GroupMetadataValue(None, 0, None, None, now_ms, ())
        self.state.apply(result, GroupMetadataRecord(group_id, value))
        return self.state.groups[group_id]

    def _accepts_joining_member(self, group: Group, member_id: str) -> bool:
        """group.max.size (spec §1.6 step 2): counted by parked joins while JOINING."""
        limit = self.state.config.group_max_size
        if group.state is GroupState.JOINING:
            member = group.members.get(member_id)
            if member is not None and member.join_token is not None:
                return True
            return group.num_awaiting_join < limit
        if group.state is GroupState.AWAITING_SYNC or group.members:
            return member_id in group.members or len(group.members) < limit
        return True

    def _kick_for_max_size(self, result: Result, group: Group, member_id: str, now: int) -> None:
        """A rejected id leaves the group: how members beyond a lowered max are shed."""
        if member_id in group.pending_join:
            group.pending_join.discard(member_id)
            self.state.cancel(result, pending_key(group.group_id, member_id))
        elif member_id in group.members:
            self._remove_member(result, group, member_id, now, "max_size")

    def _join_new_member(
        self, result: Result, group: Group, cmd: JoinGroup, now_ms: int, token: Hashable
    ) -> None:
        if cmd.group_instance_id is not None:
            old_id = group.static_members.get(cmd.group_instance_id)
            new_id = f"{cmd.group_instance_id}-{self.state.rng.uuid4()}"
            if old_id is not None:
                self._replace_static_member(result, group, old_id, new_id, cmd, now_ms, token)
            else:
                self._add_member_and_rebalance(result, group, new_id, cmd, now_ms, token)
            return
        new_id = f"{cmd.client_id}-{self.state.rng.uuid4()}"
        if cmd.version >= 4:
            # KIP-394: hand out an id and wait for the member to come back with it.
            group.pending_join.add(new_id)
            self.state.schedule(
                result, pending_key(group.group_id, new_id), now_ms + cmd.session_timeout_ms
            )
            result.reply(token, JoinGroupReply(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
            return
        self._add_member_and_rebalance(result, group, new_id, cmd, now_ms, token)

    def _join_existing_member(
        self, result: Result, group: Group, cmd: JoinGroup, now_ms: int, token: Hashable
    ) -> None:
        if cmd.member_id in group.pending_join:
            if cmd.group_instance_id is not None:
                # Kafka: IllegalStateException (a static member is never handed a pending id).
                raise CoordinatorError(ErrorCode.UNKNOWN_SERVER_ERROR, "pending id with instance")
            group.pending_join.discard(cmd.member_id)
            self.state.cancel(result, pending_key(group.group_id, cmd.member_id))
            self._add_member_and_rebalance(result, group, cmd.member_id, cmd, now_ms, token)
            return
        member = group.validate_member(cmd.member_id, cmd.group_instance_id)
        if group.state is GroupState.JOINING:
            self._update_member_and_rebalance(result, group, member, cmd, now_ms, token)
        elif group.state is GroupState.AWAITING_SYNC:
            if member.matches(cmd.protocols):
                # Lost the reply? Answer for the current generation again.
                result.reply(token, self._join_reply(group, member))
            else:
                self._update_member_and_rebalance(result, group, member, cmd, now_ms, token)
        elif group.state is GroupState.STABLE and group.members:
            if group.is_leader(member.member_id) or not member.matches(cmd.protocols):
                self._update_member_and_rebalance(result, group, member, cmd, now_ms, token)
            else:
                # An unchanged follower: current generation, no rebalance, timeouts unchanged.
                result.reply(token, self._join_reply(group, member, with_members=False))
        else:
            raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)

    def _add_member_and_rebalance(
        self,
        result: Result,
        group: Group,
        member_id: str,
        cmd: JoinGroup,
        now_ms: int,
        token: Hashable,
    ) -> None:
        was_empty = group.state is GroupState.STABLE and not group.members
        member = Member(
            member_id=member_id,
            group_instance_id=cmd.group_instance_id,
            client_id=cmd.client_id,
            client_host=cmd.client_host,
            rebalance_timeout_ms=cmd.rebalance_timeout_ms,
            session_timeout_ms=cmd.session_timeout_ms,
            protocol_type=cmd.protocol_type,
            protocols=cmd.protocols,
            join_token=token,
            is_new=True,
            join_version=cmd.version,
        )
        if group.state is GroupState.JOINING and group.initial_rebalance:
            group.new_member_added = True
        group.add_member(member)
        result.event(
            "member_joined",
            now_ms,
            group.group_id,
            group.generation,
            member_id,
            client_id=cmd.client_id,
            instance_id=cmd.group_instance_id,
            protocols=[name for name, _ in cmd.protocols],
        )
        self.state.schedule(
            result, session_key(group.group_id, member_id), now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
        )
        if group.can_rebalance():
            self.prepare_rebalance(
                result, group, now_ms, initial=was_empty, trigger="member_joined"
            )
        else:
            self.maybe_complete_join(result, group, now_ms)

    def _update_member_and_rebalance(
        self,
        result: Result,
        group: Group,
        member: Member,
        cmd: JoinGroup,
        now_ms: int,
        token: Hashable,
    ) -> None:
        if group.is_leader(member.member_id):
            trigger = "leader_rejoined"
        elif member.matches(cmd.protocols):
            trigger = "member_rejoined"
        else:
            trigger = "metadata_changed"
        group.update_protocols(member, cmd.protocols)
        member.rebalance_timeout_ms = cmd.rebalance_timeout_ms
        member.session_timeout_ms = cmd.session_timeout_ms
        self._park_join(result, group, member, token, cmd.version)
        if group.can_rebalance():
            self.prepare_rebalance(result, group, now_ms, initial=False, trigger=trigger)
        else:
            self.maybe_complete_join(result, group, now_ms)

    def _park_join(
        self, result: Result, group: Group, member: Member, token: Hashable, version: int
    ) -> None:
        superseded = group.park_join(member, token, version)
        if superseded is not None:
            result.reply(superseded, _SUPERSEDED_JOIN)  # DIFFERS: Kafka never answers it

    def _replace_static_member(
        self,
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
            "member_expired", now_ms, group.group_id, group.generation, old_id, reason="replaced"
        )
        result.event(
            "member_joined",
            now_ms,
            group.group_id,
            group.generation,
            new_id,
            client_id=old.client_id,
            instance_id=old.group_instance_id,
            protocols=[name for name, _ in cmd.protocols],
        )
        group.remove_member(old_id, next_leader=None)
        self.state.cancel(result, session_key(group.group_id, old_id))
        member = Member(
            member_id=new_id,
            group_instance_id=old.group_instance_id,
            client_id=old.client_id,  # Kafka keeps the old client id/host
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms,
            protocol_type=old.protocol_type,
            protocols=old.protocols,
            assignment=old.assignment,
        )
        group.add_member(member)
        if old_leader == old_id:
            group.leader_id = new_id
        if was_pending_sync:  # DIFFERS: see module docstring
            group.pending_sync.add(new_id)
        self._rearm_session(result, group, member, now_ms)
        # Then behave like an update of the new member.
        group.update_protocols(member, cmd.protocols)
        member.rebalance_timeout_ms = cmd.rebalance_timeout_ms
        member.session_timeout_ms = cmd.session_timeout_ms
        group.park_join(member, token, cmd.version)
        if group.state is GroupState.STABLE:
            if group.select_protocol() == group.protocol_name:
                self._answer_static_rejoin_without_rebalance(result, group, member, old_leader)
            else:
                self.prepare_rebalance(
                    result, group, now_ms, initial=False, trigger="static_replaced"
                )
        elif group.state is GroupState.AWAITING_SYNC:
            # The old id may already be in the leader's assignment: rebalance.
            self.prepare_rebalance(result, group, now_ms, initial=False, trigger="static_replaced")
        else:
            self.maybe_complete_join(result, group, now_ms)

    def _answer_static_rejoin_without_rebalance(
        self, result: Result, group: Group, member: Member, old_leader: str | None
    ) -> None:
        self.state.apply(result, GroupMetadataRecord(group.group_id, metadata_value(group)))
        token = group.unpark_join(member)
        assert token is not None
        is_leader = group.is_leader(member.member_id)
        if member.join_version >= 9:
            # KIP-814: the replaced leader learns it leads but must not reassign.
            reply = replace(
                self._join_reply(group, member, with_members=is_leader), skip_assignment=is_leader
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

    def _join_reply(
        self, group: Group, member: Member, with_members: bool = True
    ) -> JoinGroupReply:
        members: tuple[JoinGroupMember, ...] = ()
        if with_members and group.is_leader(member.member_id):
            protocol = group.protocol_name or ""
            members = tuple(
                JoinGroupMember(m.member_id, m.group_instance_id, m.metadata_for(protocol))
                for m in group.members.values()
            )
        return JoinGroupReply(
            ErrorCode.NONE,
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=members,
        )

    # ================================================================== rebalance verbs
    def prepare_rebalance(
        self, result: Result, group: Group, now_ms: int, initial: bool, trigger: str
    ) -> None:
        """STABLE/AWAITING_SYNC -> JOINING. `initial`: the group had no members (Kafka: Empty).

        `trigger` names the cause for the event log (see `rebalance.events`).
        """
        result.event(
            "rebalance_started",
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
        self.state.cancel(result, sync_key(group.group_id))
        group.pending_sync.clear()
        group.sync_generation = -1
        self._transition(group, "begin_rebalance", now_ms)
        group.initial_rebalance = initial
        if initial:
            # Wait the full initial delay even if everybody has joined (spec §9 rule 1).
            delay = self.state.config.group_initial_rebalance_delay_ms
            group.new_member_added = False
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(group.max_rebalance_timeout_ms() - delay, 0)
            self.state.schedule(result, join_key(group.group_id), now_ms + delay)
            return
        if group.all_members_joined():
            self.complete_join(result, group, now_ms)
        else:
            self.state.schedule(
                result, join_key(group.group_id), now_ms + group.max_rebalance_timeout_ms()
            )

    def maybe_complete_join(self, result: Result, group: Group, now_ms: int) -> None:
        if (
            group.state is GroupState.JOINING
            and not group.initial_rebalance
            and group.all_members_joined()
        ):
            self.complete_join(result, group, now_ms)

    def complete_join(self, result: Result, group: Group, now_ms: int) -> None:
        """JOINING -> AWAITING_SYNC (a new generation), or -> STABLE when nobody is left."""
        self.state.cancel(result, join_key(group.group_id))
        for member in [m for m in group.members.values() if m.join_token is None]:
            if not member.is_static:  # static members keep their place (spec §2)
                self._remove_member(
                    result, group, member.member_id, now_ms, "rebalance_timeout", False
                )
        if group.state is GroupState.DOWN:
            return
        joined = [m.member_id for m in group.joined_members()]
        if group.members and (group.leader_id is None or group.leader_id not in joined):
            if not joined:
                # Only static members that have not rejoined: wait another rebalance timeout.
                self.state.schedule(
                    result, join_key(group.group_id), now_ms + group.max_rebalance_timeout_ms()
                )
                return
            group.leader_id = joined[self.state.rng.below(len(joined))]  # DIFFERS: random
        group.generation += 1
        group.generation_members = len(group.members)
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            self._transition(group, "empty_out", now_ms)
            result.event("group_empty", now_ms, group.group_id, group.generation)
            self.state.apply(result, GroupMetadataRecord(group.group_id, metadata_value(group)))
            return
        group.protocol_name = group.select_protocol()
        self._transition(group, "complete_join", now_ms)
        result.event(
            "join_completed",
            now_ms,
            group.group_id,
            group.generation,
            leader=group.leader_id,
            protocol=group.protocol_name,
            members=list(group.members),
        )
        for member in group.members.values():
            token = group.unpark_join(member)
            if token is not None:
                result.reply(token, self._join_reply(group, member))
            member.is_new = False
            self._rearm_session(result, group, member, now_ms)
        group.pending_sync.add_all(group.members)
        group.sync_generation = group.generation
        self.state.schedule(
            result, sync_key(group.group_id), now_ms + group.max_rebalance_timeout_ms()
        )

    def complete_sync(
        self, result: Result, group: Group, assignments: dict[str, bytes], now_ms: int
    ) -> None:
        """AWAITING_SYNC -> STABLE with the leader's assignment, persisted as one record.

        Members the leader left out get empty bytes; extra keys are ignored (spec §1.5).
        The record's replay is what sets each member's assignment.
        """
        self._transition(group, "complete_sync", now_ms)
        value = metadata_value(group, assignments)
        self.state.apply(result, GroupMetadataRecord(group.group_id, value))
        # Raw bytes: decoding them for the log is the event writer's job, off the request path.
        result.event(
            "sync_completed",
            now_ms,
            group.group_id,
            group.generation,
            protocol_type=group.protocol_type,
            assignments={m.member_id: m.assignment for m in value.members},
        )
        result.event("group_stable", now_ms, group.group_id, group.generation)

    # ============================================================================ SyncGroup
    def sync(self, cmd: SyncGroup, now_ms: int, token: Hashable) -> Result:
        result = Result()
        try:
            self._sync(result, cmd, now_ms, token)
        except CoordinatorError as exc:
            result.reply(token, SyncGroupReply(exc.code))
        return result

    def _sync(self, result: Result, cmd: SyncGroup, now_ms: int, token: Hashable) -> None:
        if cmd.version >= 5 and (cmd.protocol_type is None or cmd.protocol_name is None):
            raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "v5+ requires both")
        group = self.state.groups.get(cmd.group_id)
        if group is None or (group.state is GroupState.STABLE and not group.members):
            raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is GroupState.DOWN:
            raise CoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        member = group.validate_member(cmd.member_id, cmd.group_instance_id)
        if cmd.generation_id != group.generation:
            raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)
        if cmd.protocol_type is not None and cmd.protocol_type != group.protocol_type:
            raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if (
            cmd.protocol_name is not None
            and group.protocol_name is not None
            and cmd.protocol_name != group.protocol_name
        ):
            raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.state is GroupState.JOINING:
            raise CoordinatorError(ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(member.member_id)
        if group.state is GroupState.STABLE:
            result.reply(token, self._sync_reply(group, member))
            return
        # AWAITING_SYNC: park until the leader's assignment is durable.
        if member.sync_token is not None:
            result.reply(member.sync_token, _SUPERSEDED_SYNC)  # DIFFERS: Kafka never answers
        member.sync_token = token
        if group.is_leader(member.member_id):
            self.complete_sync(result, group, dict(cmd.assignments), now_ms)
            for m in group.members.values():
                if m.sync_token is not None:
                    result.reply(m.sync_token, self._sync_reply(group, m))
                    m.sync_token = None
                    self._rearm_session(result, group, m, now_ms)

    @staticmethod
    def _sync_reply(group: Group, member: Member) -> SyncGroupReply:
        return SyncGroupReply(
            ErrorCode.NONE,
            assignment=member.assignment,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
        )

    # ============================================================================ Heartbeat
    def heartbeat(self, cmd: HeartbeatCommand, now_ms: int, token: Hashable) -> Result:
        result = Result()
        result.reply(token, HeartbeatReply(self._heartbeat(result, cmd, now_ms)))
        return result

    def _heartbeat(self, result: Result, cmd: HeartbeatCommand, now_ms: int) -> ErrorCode:
        group = self.state.groups.get(cmd.group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DOWN:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            member = group.validate_member(cmd.member_id, cmd.group_instance_id)
        except CoordinatorError as exc:
            return exc.code
        if cmd.generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.STABLE and not group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._rearm_session(result, group, member, now_ms)
        if group.state is GroupState.JOINING:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # =========================================================================== LeaveGroup
    def leave(self, cmd: LeaveGroup, now_ms: int, token: Hashable) -> Result:
        result = Result()
        group = self.state.groups.get(cmd.group_id)
        if group is None:
            left = tuple(
                LeftMember(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
                for m in cmd.members
            )
            result.reply(token, LeaveGroupReply(ErrorCode.NONE, left))
            return result
        if group.state is GroupState.DOWN:
            result.reply(token, LeaveGroupReply(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return result
        outcomes: list[LeftMember] = []
        removed_member = removed_pending = False
        for leaving in cmd.members:
            pending = leaving.member_id in group.pending_join
            code = self._leave_one(
                result, group, leaving.member_id, leaving.group_instance_id, now_ms
            )
            outcomes.append(LeftMember(leaving.member_id, leaving.group_instance_id, code))
            removed_pending |= pending and code is ErrorCode.NONE
            removed_member |= not pending and code is ErrorCode.NONE
        # A pending id is not a member: dropping it never starts a rebalance, it may only let
        # a waiting join phase complete (Kafka's removePendingMemberAndUpdateGroup).
        if removed_member and group.can_rebalance():
            self.prepare_rebalance(result, group, now_ms, initial=False, trigger="member_left")
        elif removed_member or removed_pending:
            self.maybe_complete_join(result, group, now_ms)
        result.reply(token, LeaveGroupReply(ErrorCode.NONE, tuple(outcomes)))
        return result

    def _leave_one(
        self, result: Result, group: Group, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        if member_id == "":
            # KIP-345 admin removal by instance id.
            target = group.static_members.get(instance_id) if instance_id is not None else None
            if target is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member(result, group, target, now_ms, "admin_removal")
            return ErrorCode.NONE
        if member_id in group.pending_join:
            group.pending_join.discard(member_id)
            self.state.cancel(result, pending_key(group.group_id, member_id))
            return ErrorCode.NONE
        try:
            group.validate_member(member_id, instance_id)
        except CoordinatorError as exc:
            return exc.code
        self._remove_member(result, group, member_id, now_ms, "leave")
        return ErrorCode.NONE

    # ================================================================================ timers
    def expire_session(self, group: Group, member_id: str, now_ms: int) -> Result:
        """A member's heartbeat/session timer fired (spec §1.5 heartbeat expiry)."""
        result = Result()
        member = group.members.get(member_id)
        if group.state is GroupState.DOWN or member is None:
            return result
        satisfied = not member.is_new and (
            member.join_token is not None or member.sync_token is not None
        )
        if satisfied:
            return result
        reason = "new_member_timeout" if member.is_new else "session_timeout"
        self._remove_member(result, group, member_id, now_ms, reason)
        if group.can_rebalance():
            self.prepare_rebalance(result, group, now_ms, initial=False, trigger="member_expired")
        elif group.state is GroupState.JOINING and group.all_members_joined():
            self.complete_join(result, group, now_ms)
        return result

    def expire_pending(self, group: Group, member_id: str, now_ms: int) -> Result:
        """A MEMBER_ID_REQUIRED id never came back within its session timeout."""
        result = Result()
        if member_id not in group.pending_join:
            return result
        group.pending_join.discard(member_id)
        if group.state is GroupState.JOINING and group.all_members_joined():
            self.complete_join(result, group, now_ms)
        return result

    def expire_join(self, group: Group, now_ms: int) -> Result:
        """The rebalance timeout or the initial delay elapsed."""
        result = Result()
        if group.state is not GroupState.JOINING:
            return result
        if group.initial_rebalance and group.new_member_added and group.initial_remaining_ms:
            # Extend by min(delay, remaining); note Kafka subtracts the *old* delay.
            delay = group.initial_delay_ms
            group.new_member_added = False
            group.initial_delay_ms = min(
                self.state.config.group_initial_rebalance_delay_ms, group.initial_remaining_ms
            )
            group.initial_remaining_ms = max(group.initial_remaining_ms - delay, 0)
            self.state.schedule(result, join_key(group.group_id), now_ms + group.initial_delay_ms)
            return result
        self.complete_join(result, group, now_ms)
        return result

    def expire_sync(self, group: Group, now_ms: int) -> Result:
        """Members of the new generation that never sent SyncGroup are evicted."""
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
            self._remove_member(result, group, member_id, now_ms, "sync_timeout")
        self.prepare_rebalance(result, group, now_ms, initial=False, trigger="sync_timeout")
        return result

    # ================================================================================ helpers
    def _remove_member(
        self,
        result: Result,
        group: Group,
        member_id: str,
        now_ms: int,
        reason: str,
        choose_leader: bool = True,
    ) -> None:
        """Remove a member, answering anything it has parked, and pick a new leader.

        `reason` is "leave" or "admin_removal" (a member_left event) or an expiry reason.
        """
        kind = "member_left" if reason in ("leave", "admin_removal") else "member_expired"
        member = group.members[member_id]
        # A session expiry fires one session timeout after the last heartbeat: the timeout lets
        # the event log tell when the member was last heard from (analytics' ownership).
        silent = (
            {"session_timeout_ms": member.session_timeout_ms} if reason == "session_timeout" else {}
        )
        result.event(
            kind, now_ms, group.group_id, group.generation, member_id, reason=reason, **silent
        )
        join_token = group.unpark_join(member)
        if join_token is not None:
            result.reply(join_token, _REMOVED_JOIN)
        if member.sync_token is not None:
            result.reply(member.sync_token, _REMOVED_SYNC)  # DIFFERS: Kafka drops it
            member.sync_token = None
        next_leader = None
        if choose_leader and group.leader_id == member_id and len(group.members) > 1:
            others = [m for m in group.members if m != member_id]
            next_leader = others[self.state.rng.below(len(others))]  # DIFFERS: random
        group.remove_member(member_id, next_leader)
        self.state.cancel(result, session_key(group.group_id, member_id))

    def _rearm_session(self, result: Result, group: Group, member: Member, now_ms: int) -> None:
        self.state.schedule(
            result,
            session_key(group.group_id, member.member_id),
            now_ms + member.session_timeout_ms,
        )

    def _transition(self, group: Group, trigger: str, now_ms: int) -> None:
        fire(group, trigger)
        group.current_state_timestamp_ms = now_ms
