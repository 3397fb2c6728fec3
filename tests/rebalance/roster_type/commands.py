"""The roster's one request: enlist (or, with `leave`, leave) a member."""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.commands import Command
from rebalance.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class EnlistReply:
    error: ErrorCode
    epoch: int = -1


@dataclass(frozen=True, slots=True)
class Enlist(Command[EnlistReply]):
    group_id: str
    member_id: str
    session_timeout_ms: int = 10_000
    leave: bool = False

    def error_reply(self, code: ErrorCode) -> EnlistReply:
        return EnlistReply(code)
