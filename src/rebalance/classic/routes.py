"""The classic API as the core routes it: JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

Each route applies the coordinator-level rules before a group is touched (spec §1.6, §4):
an empty group id is INVALID_GROUP_ID; JoinGroup's session timeout outside [group.min,
group.max] is INVALID_SESSION_TIMEOUT (checked first, as Kafka's new coordinator does);
SyncGroup v5+ must name its protocol type and name; then the partition must be owned and
loaded (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS; Heartbeat answers NONE while loading,
as Kafka does). A request naming a group of another type is answered by that type if it
registered a route for it (`GroupType.foreign_routes`: consumer groups, online migration),
else as Kafka 4.4 answers for a group of a type that takes no classic requests (a share group,
live or empty): JoinGroup INCONSISTENT_GROUP_PROTOCOL; SyncGroup and Heartbeat
UNKNOWN_MEMBER_ID; LeaveGroup NONE with UNKNOWN_MEMBER_ID for each member.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from rebalance.classic import join, liveness, sync
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.group import Group
from rebalance.classic.replies import HeartbeatReply, JoinGroupReply, LeaveGroupReply, LeftMember
from rebalance.effects import Result, single_reply
from rebalance.errors import ErrorCode
from rebalance.state import CoordinatorState, PartitionStatus

#: (An alias: read on every JoinGroup, SyncGroup and Heartbeat, and on Python 3.11 an enum
#: member costs a class `__getattr__` hook, four times a module global's lookup.)
_ACTIVE = PartitionStatus.ACTIVE


def not_classic_reply(cmd: JoinGroup | SyncGroup | Heartbeat | LeaveGroup) -> Any:
    """Kafka's answer to a classic request naming a group of another type that takes none (see
    the module docstring); for client-balance groups TubeMQ's consume-type check would say
    CLIENT_INCONSISTENT_CONSUMETYPE (424), which Kafka's clients do not know."""
    if isinstance(cmd, JoinGroup):
        return JoinGroupReply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if isinstance(cmd, LeaveGroup):
        unknown = ErrorCode.UNKNOWN_MEMBER_ID
        members = tuple(LeftMember(m.member_id, m.group_instance_id, unknown) for m in cmd.members)
        return LeaveGroupReply(ErrorCode.NONE, members)
    return cmd.error_reply(ErrorCode.UNKNOWN_MEMBER_ID)


class ClassicRoutes:
    """The four classic requests, from the core's dispatch to the phase that answers them."""

    __slots__ = ("state",)

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state

    def _live_classic(self, group_id: str) -> bool:
        """Whether `group_id` is a loaded classic group on a live partition: what nearly every
        classic request finds, and then the availability and group-type checks all pass (one
        lookup instead of their three, on every JoinGroup, SyncGroup and Heartbeat)."""
        state = self.state
        group = state.groups.get(group_id)
        if group.__class__ is not Group:
            return False
        owned = state.partitions.get(group.partition)
        return owned is not None and owned.status is _ACTIVE

    def _other_type(self, group_id: str) -> Any | None:
        """The group named, if it is of another type than classic."""
        group = self.state.groups.get(group_id)
        return group if group is not None and group.__class__ is not Group else None

    def _foreign(self, group: Any, cmd: Any, now_ms: int, token: Hashable) -> Result:
        route = self.state.foreign_routes.get((group.group_type, type(cmd)))
        if route is None:
            return single_reply(token, not_classic_reply(cmd))
        return route(group, cmd, now_ms, token)

    def join_group(self, cmd: JoinGroup, now_ms: int, token: Hashable) -> Result:
        cfg = self.state.config
        if not cmd.group_id:
            error = ErrorCode.INVALID_GROUP_ID
        elif not (
            cfg.group_min_session_timeout_ms
            <= cmd.session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        elif self._live_classic(cmd.group_id):
            return join.join(self.state, cmd, now_ms, token)
        else:
            error = self.state.availability(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        if (other := self._other_type(cmd.group_id)) is not None:
            return self._foreign(other, cmd, now_ms, token)
        return join.join(self.state, cmd, now_ms, token)

    def sync_group(self, cmd: SyncGroup, now_ms: int, token: Hashable) -> Result:
        if not cmd.group_id:
            error = ErrorCode.INVALID_GROUP_ID
        elif cmd.version >= 5 and (cmd.protocol_type is None or cmd.protocol_name is None):
            # Mandatory from v5; rejected before the coordinator is consulted (spec §1.8).
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        elif self._live_classic(cmd.group_id):
            return sync.sync(self.state, cmd, now_ms, token)
        else:
            error = self.state.availability(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        if (other := self._other_type(cmd.group_id)) is not None:
            return self._foreign(other, cmd, now_ms, token)
        return sync.sync(self.state, cmd, now_ms, token)

    def heartbeat(self, cmd: Heartbeat, now_ms: int, token: Hashable) -> Result:
        if cmd.group_id and self._live_classic(cmd.group_id):
            return liveness.heartbeat(self.state, cmd, now_ms, token)
        error = (
            self.state.availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        )
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # Both Kafka coordinators answer blindly OK while loading.
            return single_reply(token, HeartbeatReply(ErrorCode.NONE))
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        if (other := self._other_type(cmd.group_id)) is not None:
            return self._foreign(other, cmd, now_ms, token)
        return liveness.heartbeat(self.state, cmd, now_ms, token)

    def leave_group(self, cmd: LeaveGroup, now_ms: int, token: Hashable) -> Result:
        error = (
            self.state.availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        )
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        if (other := self._other_type(cmd.group_id)) is not None:
            return self._foreign(other, cmd, now_ms, token)
        return liveness.leave(self.state, cmd, now_ms, token)
