"""The client-balance API as the core routes it: heartbeat (join, leave), register, release
and describe, each after the coordinator-level checks (an empty group id is INVALID_GROUP_ID;
the group's partition must be owned and loaded)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import Protocol

from rebalance.client_balance.commands import (
    ClientBalanceDescribe,
    ClientBalanceHeartbeat,
    RegisterPartitions,
    ReleasePartitions,
)
from rebalance.client_balance.replies import ClientBalanceDescribeReply
from rebalance.effects import Result, single_reply
from rebalance.errors import ErrorCode
from rebalance.state import CoordinatorState


class _Handlers(Protocol):
    """What the routes call of `ClientBalanceGroupType`."""

    @property
    def state(self) -> CoordinatorState: ...

    def heartbeat(self, cmd: ClientBalanceHeartbeat, now_ms: int, token: Hashable) -> Result: ...

    def register(self, cmd: RegisterPartitions, now_ms: int, token: Hashable) -> Result: ...

    def release(self, cmd: ReleasePartitions, now_ms: int, token: Hashable) -> Result: ...

    def describe_client_balance(self, cmd: ClientBalanceDescribe) -> ClientBalanceDescribeReply: ...


class ClientBalanceRoutes:
    __slots__ = ("handlers",)

    def __init__(self, handlers: _Handlers) -> None:
        self.handlers = handlers

    def _refused(self, group_id: str) -> ErrorCode:
        return (
            self.handlers.state.availability(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
        )

    def heartbeat(self, cmd: ClientBalanceHeartbeat, now_ms: int, token: Hashable) -> Result:
        error = self._refused(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self.handlers.heartbeat(cmd, now_ms, token)

    def register(self, cmd: RegisterPartitions, now_ms: int, token: Hashable) -> Result:
        error = self._refused(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self.handlers.register(cmd, now_ms, token)

    def release(self, cmd: ReleasePartitions, now_ms: int, token: Hashable) -> Result:
        error = self._refused(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self.handlers.release(cmd, now_ms, token)

    def describe(self, cmd: ClientBalanceDescribe, now_ms: int, token: Hashable) -> Result:
        described = self.handlers.describe_client_balance(cmd)
        groups = []
        for described_group in described.groups:
            error = self.handlers.state.availability(described_group.group_id)
            if error is not ErrorCode.NONE:
                described_group = replace(described_group, error=error)
            groups.append(described_group)
        return single_reply(token, ClientBalanceDescribeReply(tuple(groups)))
