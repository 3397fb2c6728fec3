"""`RosterGroupType`: roster groups as the core sees them (`rebalance.group_types.GroupType`)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

from rebalance.commands import Command, OffsetCommit
from rebalance.effects import Result, single_reply
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.group_types import CommitPartitionValidator, GroupType, Route
from rebalance.records import Record
from rebalance.replies import DescribedGroup, DescribedMember, ListedGroup
from rebalance.state import CoordinatorState
from rebalance.timers import TimerKey
from roster_type.commands import Enlist, EnlistReply
from roster_type.group import GROUP_TYPE, RosterGroup
from roster_type.records import RosterRecord, RosterValue

SESSION = "roster_session"


def session_key(group_id: str, member_id: str) -> TimerKey:
    return (SESSION, group_id, member_id)


class RosterGroupType(GroupType):
    name: ClassVar[str] = GROUP_TYPE
    group_class: ClassVar[type[Any]] = RosterGroup
    record_class: ClassVar[type[Any]] = RosterRecord
    timer_kinds: ClassVar[frozenset[str]] = frozenset({SESSION})

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state

    # -- requests ---------------------------------------------------------------------------
    def routes(self) -> Mapping[type[Command[Any]], Route]:
        return {Enlist: self.enlist}

    def enlist(self, cmd: Enlist, now_ms: int, token: Hashable) -> Result:
        error = (
            self.state.availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        )
        group = self.state.groups.get(cmd.group_id)
        if error is ErrorCode.NONE and group is not None and not isinstance(group, RosterGroup):
            error = ErrorCode.GROUP_ID_NOT_FOUND  # a group of another type
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        result = Result()
        members = dict(group.members) if group is not None else {}
        epoch = group.epoch if group is not None else 0
        key = session_key(cmd.group_id, cmd.member_id)
        if cmd.leave:
            if members.pop(cmd.member_id, None) is None:
                return single_reply(token, EnlistReply(ErrorCode.UNKNOWN_MEMBER_ID))
            self.state.cancel(result, key)
        else:
            members[cmd.member_id] = cmd.session_timeout_ms
            self.state.schedule(result, key, now_ms + cmd.session_timeout_ms)
        if group is None or members != group.members:
            epoch += 1
            value = RosterValue(epoch, tuple(members.items()))
            self.state.apply(result, RosterRecord(cmd.group_id, value))
        result.reply(token, EnlistReply(ErrorCode.NONE, epoch))
        return result

    # -- offsets ----------------------------------------------------------------------------
    def validate_offset_commit(
        self, result: Result, group: RosterGroup, cmd: OffsetCommit, now_ms: int
    ) -> CommitPartitionValidator | None:
        if cmd.generation_id < 0 and group.empty:
            return None
        if cmd.member_id not in group.members:
            raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
        if cmd.generation_id != group.epoch:
            raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)
        return None

    def subscribed_topics(self, group: RosterGroup) -> set[str] | None:
        return None  # members say nothing of their topics: every topic is theirs

    # -- timers, partitions -----------------------------------------------------------------
    def on_timer(self, key: TimerKey, group: RosterGroup, now_ms: int) -> Result:
        result = Result()
        members = {m: s for m, s in group.members.items() if m != key[2]}
        if members != group.members:
            value = RosterValue(group.epoch + 1, tuple(members.items()))
            self.state.apply(result, RosterRecord(group.group_id, value))
        return result

    def loaded(self, result: Result, group: RosterGroup, now_ms: int) -> None:
        for member_id, session_ms in group.members.items():
            self.state.schedule(result, session_key(group.group_id, member_id), now_ms + session_ms)

    def unloaded(self, result: Result, group: RosterGroup) -> None:
        """Nothing is ever parked."""

    # -- records ----------------------------------------------------------------------------
    def replay(self, group: RosterGroup, value: RosterValue) -> None:
        group.epoch = value.epoch
        group.members = dict(value.members)

    def tombstones(self, group: RosterGroup) -> list[Record]:
        return [RosterRecord(group.group_id, None)]

    # -- views ------------------------------------------------------------------------------
    def describe(self, group: RosterGroup) -> DescribedGroup:
        members = tuple(DescribedMember(m, None, "", "", b"", b"") for m in group.members)
        return DescribedGroup(
            group.group_id, ErrorCode.NONE, group.kafka_state, GROUP_TYPE, "", members
        )

    def listed(self, group: RosterGroup) -> ListedGroup:
        return ListedGroup(group.group_id, GROUP_TYPE, group.kafka_state, GROUP_TYPE)

    def deletable(self, group: RosterGroup) -> ErrorCode:
        return ErrorCode.NONE if group.empty else ErrorCode.NON_EMPTY_GROUP
