"""The classic API's requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) as the core sees
them: frozen, version-agnostic values; `version` is kept where behaviour depends on it
(MEMBER_ID_REQUIRED from JoinGroup v4, SkipAssignment from v9, ...)."""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    SyncGroupReply,
)
from rebalance.commands import Command
from rebalance.errors import ErrorCode
from rebalance.quick_init import quick_init

#: The newest JoinGroup version the core knows; joins default to it.
LATEST_JOIN_VERSION = 9


@quick_init
@dataclass(frozen=True, slots=True)
class JoinGroup(Command[JoinGroupReply]):
    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int  # JoinGroup v0 has none: the wire layer passes the session timeout
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None
    version: int = LATEST_JOIN_VERSION

    def error_reply(self, code: ErrorCode) -> JoinGroupReply:
        return JoinGroupReply(code, member_id=self.member_id)


@quick_init
@dataclass(frozen=True, slots=True)
class SyncGroup(Command[SyncGroupReply]):
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    version: int = 5

    def error_reply(self, code: ErrorCode) -> SyncGroupReply:
        return SyncGroupReply(code)


@quick_init
@dataclass(frozen=True, slots=True)
class Heartbeat(Command[HeartbeatReply]):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    version: int = 4

    def error_reply(self, code: ErrorCode) -> HeartbeatReply:
        return HeartbeatReply(code)


@dataclass(frozen=True, slots=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroup(Command[LeaveGroupReply]):
    group_id: str
    members: tuple[LeavingMember, ...]
    version: int = 5

    def error_reply(self, code: ErrorCode) -> LeaveGroupReply:
        return LeaveGroupReply(code)
