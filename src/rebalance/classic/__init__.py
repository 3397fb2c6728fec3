"""The classic group type: Kafka's JoinGroup/SyncGroup protocol (spec §1-§2), one module a phase.

* `commands`, `replies`, `records`, `timers`  the API's requests and answers, the durable
               metadata snapshot, the timer keys;
* `group`      the group and member data and their bookkeeping (`Group`, `Member`);
* `join`       JoinGroup: admit, update or replace members (KIP-394, KIP-345, KIP-814);
* `sync`       SyncGroup: the leader's assignment, persisted, handed out;
* `liveness`   Heartbeat and LeaveGroup;
* `rebalance`  the verbs the others drive: prepare/complete join, complete sync, remove member;
* `expiry`     what each classic timer does when it fires;
* `offsets`    who may commit, and the topics a "consumer" protocol group's members consume;
* `routes`     the four requests from the core's dispatch, the coordinator-level checks first.

`ClassicGroupType` is what the core sees of all this (`rebalance.group_types.GroupType`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rebalance.classic import expiry, offsets
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.group import Group, Member
from rebalance.classic.rebalance import prepare_rebalance
from rebalance.classic.records import GroupMetadataRecord, GroupMetadataValue
from rebalance.classic.replies import JoinGroupReply, SyncGroupReply
from rebalance.classic.routes import ClassicRoutes
from rebalance.classic.timers import JOIN, PENDING, SESSION, SYNC, session_key
from rebalance.commands import Command, OffsetCommit
from rebalance.effects import Result
from rebalance.errors import ErrorCode
from rebalance.event_schema import Trigger
from rebalance.group_types import CommitPartitionValidator, GroupType, Route
from rebalance.lifecycle import GroupState
from rebalance.records import Record
from rebalance.replies import DescribedGroup, DescribedMember, ListedGroup
from rebalance.state import CoordinatorState
from rebalance.timers import TimerKey


class ClassicGroupType(GroupType):
    """Kafka's classic groups over a `CoordinatorState`: requests, timers, records, views."""

    name: ClassVar[str] = Group.group_type
    group_class: ClassVar[type[Any]] = Group
    record_class: ClassVar[type[Any]] = GroupMetadataRecord
    timer_kinds: ClassVar[frozenset[str]] = frozenset({SESSION, PENDING, JOIN, SYNC})

    __slots__ = ("state",)

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state

    # -- requests ----------------------------------------------------------------------
    def routes(self) -> Mapping[type[Command[Any]], Route]:
        routes = ClassicRoutes(self.state)
        return {
            JoinGroup: routes.join_group,
            SyncGroup: routes.sync_group,
            Heartbeat: routes.heartbeat,
            LeaveGroup: routes.leave_group,
        }

    # -- offsets -----------------------------------------------------------------------
    def validate_offset_commit(
        self, result: Result, group: Group, cmd: OffsetCommit, now_ms: int
    ) -> CommitPartitionValidator | None:
        offsets.validate_commit(self.state, result, group, cmd, now_ms)
        return None

    @staticmethod
    def subscribed_topics(group: Group) -> set[str] | None:
        return offsets.subscribed_topics(group)

    # -- timers ------------------------------------------------------------------------
    def on_timer(self, key: TimerKey, group: Group, now_ms: int) -> Result:
        kind, _, member_id = key
        if kind == SESSION:
            return expiry.expire_session(self.state, group, member_id, now_ms)
        if kind == PENDING:
            return expiry.expire_pending(self.state, group, member_id, now_ms)
        if kind == JOIN:
            return expiry.expire_join(self.state, group, now_ms)
        return expiry.expire_sync(self.state, group, now_ms)

    # -- partition lifecycle -------------------------------------------------------------
    def loaded(self, result: Result, group: Group, now_ms: int) -> None:
        """The group's partition finished loading: arm sessions from now; a group over
        group.max.size rebalances at once (spec §4)."""
        for member in group.members.values():
            self.state.schedule(
                result,
                session_key(group.group_id, member.member_id),
                now_ms + member.session_timeout_ms,
            )
        if len(group.members) > self.state.config.group_max_size:
            prepare_rebalance(
                self.state, result, group, now_ms, initial=False, trigger=Trigger.OVER_MAX_SIZE
            )

    @staticmethod
    def unloaded(result: Result, group: Group) -> None:
        """The group's partition moved away: parked requests get NOT_COORDINATOR."""
        for member in group.members.values():
            if member.join_token is not None:
                result.reply(member.join_token, JoinGroupReply(ErrorCode.NOT_COORDINATOR))
            if member.sync_token is not None:
                result.reply(member.sync_token, SyncGroupReply(ErrorCode.NOT_COORDINATOR))
            member.join_token = member.sync_token = None

    # -- records ---------------------------------------------------------------------------
    @staticmethod
    def replay(group: Group, value: GroupMetadataValue) -> None:
        """Apply a group metadata snapshot (the tombstone is the core's: it drops the group)."""
        if group.state is GroupState.INITIALIZE or (not group.members and value.members):
            # (A live group without members gets members from a record only when a consumer
            # group converts to it online: `rebalance.consumer_group.migration`.)
            # Loading: the newest snapshot replaces whatever an older one said.
            group.members = {}
            group.static_members = {}
            group.supported_protocols = {}
            group.num_awaiting_join = 0
            group.leader_id = None
            group.generation_members = len(value.members)
            for m in value.members:
                group.add_member(Member.from_value(m, value))
        else:
            # Live: the handler built this snapshot from the group itself; what only the
            # record carries is each member's new assignment.
            for m in value.members:
                member = group.members.get(m.member_id)
                if member is not None:
                    member.assignment = m.assignment
        group.protocol_type = value.protocol_type
        group.generation = value.generation
        group.protocol_name = value.protocol_name
        group.leader_id = value.leader_id
        group.current_state_timestamp_ms = value.current_state_timestamp_ms

    @staticmethod
    def tombstones(group: Group) -> list[Record]:
        return [GroupMetadataRecord(group.group_id, None)]

    # -- views -------------------------------------------------------------------------------
    @staticmethod
    def describe(group: Group) -> DescribedGroup:
        stable = group.state is GroupState.STABLE
        protocol = group.protocol_name or ""
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata_for(protocol) if stable and protocol else b"",
                # Kafka's new coordinator shows the current assignment in every state.
                assignment=m.assignment,
            )
            for m in group.members.values()
        )
        return DescribedGroup(
            group.group_id,
            ErrorCode.NONE,
            state=group.kafka_state,
            protocol_type=group.protocol_type or "",
            protocol_data=protocol if stable else "",
            members=members,
        )

    @staticmethod
    def listed(group: Group) -> ListedGroup:
        return ListedGroup(group.group_id, group.protocol_type or "", group.kafka_state)

    @staticmethod
    def deletable(group: Group) -> ErrorCode:
        """DeleteGroups: only an Empty group goes (Kafka's `validateDeleteGroup`)."""
        return ErrorCode.NONE if group.empty else ErrorCode.NON_EMPTY_GROUP
