"""The classic API's responses (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), as the core
produces them: frozen, version-agnostic values the wire layer turns into each version's."""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.errors import ErrorCode
from rebalance.quick_init import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@quick_init
@dataclass(frozen=True, slots=True)
class JoinGroupReply:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    skip_assignment: bool = False
    members: tuple[JoinGroupMember, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class SyncGroupReply:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeftMember:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupReply:
    error: ErrorCode
    members: tuple[LeftMember, ...] = ()

    @property
    def folded_error(self) -> ErrorCode:
        """LeaveGroup v0-2 has one error: the top-level one, else the first member error."""
        if self.error is not ErrorCode.NONE:
            return self.error
        for member in self.members:
            if member.error is not ErrorCode.NONE:
                return member.error
        return ErrorCode.NONE
