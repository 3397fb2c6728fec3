"""The broker side of the differential run: the core's commands sent over the wire, the broker's
responses read back as the core's replies, so both sides answer in one vocabulary.

Requests go at the versions `BrokerUnderTest` negotiated (the model is told the same versions).
A member's JoinGroup and SyncGroup go over its own connection, where they may park, as a
consumer's do; everything else goes over its group's admin connection, which never waits.
Connections are pooled across runs: one still holding a parked request is closed instead.
"""

from __future__ import annotations

import asyncio
from typing import Any

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.groups.apis.as_client import api_key_of, reply_of, request_values
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient
from coordinator.wire.codec import build_request, encode_request
from rebalance.classic.commands import JoinGroup
from rebalance.classic.replies import JoinGroupReply
from rebalance.commands import (
    Command,
    OffsetCommit,
)
from rebalance.errors import ErrorCode

CLIENT_ID = "rebalance-conformance"
#: How long a FindCoordinator on a pooled connection may take before the connection is dropped.
STUCK_S = 5.0


class ConnectionPool:
    """Idle connections by coordinator address, reused from one run to the next."""

    def __init__(self, broker: BrokerUnderTest) -> None:
        self.broker = broker
        self._idle: dict[tuple[str, int], list[WireClient]] = {}
        self.opened = 0

    async def take(self, address: tuple[str, int]) -> WireClient:
        idle = self._idle.get(address)
        if idle:
            return idle.pop()
        self.opened += 1
        return await WireClient.connect(*address, client_id=CLIENT_ID)

    def give_back(self, address: tuple[str, int], client: WireClient) -> None:
        self._idle.setdefault(address, []).append(client)

    async def coordinator(self, group_id: str) -> tuple[str, int]:
        """The address of `group_id`'s coordinator (FindCoordinator, where the broker has it)."""
        bootstrap = (self.broker.host, self.broker.port)
        version = self.broker.versions.get(ApiKey.FIND_COORDINATOR)
        if version is None:
            return bootstrap
        values: dict[str, Any] = {"key_type": 0}
        values |= {"coordinator_keys": [group_id]} if version >= 4 else {"key": group_id}
        for _ in range(2):
            client = await self.take(bootstrap)
            try:
                found = await asyncio.wait_for(
                    client.request(ApiKey.FIND_COORDINATOR, version, values), STUCK_S
                )
            except TimeoutError:
                # A pooled connection that does not answer (a request of an earlier run still
                # ahead of it on the broker): closed, never reused; a new one is asked.
                await client.close()
                continue
            self.give_back(bootstrap, client)
            if version >= 4:
                (found,) = found.coordinators
            return (found.host, found.port)
        raise ConnectionError(f"FindCoordinator for {group_id!r} unanswered for {STUCK_S} s")

    async def close(self) -> None:
        for clients in self._idle.values():
            for client in clients:
                await client.close()
        self._idle.clear()


class BrokerSide:
    """The connections of one run: one per member slot, one admin connection per group."""

    def __init__(self, broker: BrokerUnderTest, pool: ConnectionPool) -> None:
        self.broker = broker
        self.pool = pool
        self._connections: dict[str, tuple[tuple[str, int], WireClient]] = {}
        self._pending: dict[str, asyncio.Task[object]] = {}

    async def open(self, names: dict[str, str]) -> None:
        """Connect each name (a slot, or a group's admin) to its group's coordinator."""
        addresses: dict[str, tuple[str, int]] = {}
        self.broker.used_groups.update(names.values())
        for name, group_id in names.items():
            if group_id not in addresses:
                addresses[group_id] = await self.pool.coordinator(group_id)
            address = addresses[group_id]
            self._connections[name] = (address, await self.pool.take(address))

    async def send(self, connection: str, command: Command[Any]) -> asyncio.Task[object]:
        """Write the request now (it reaches the broker before anything sent later), and read
        its answer in a task: it may be parked."""
        _, client = self._connections[connection]
        api_key = api_key_of(command)
        version = self.broker.versions[api_key]
        _, values = request_values(command, version)
        if isinstance(command, OffsetCommit) and command.version > version:
            version = command.version  # a KIP-848 commit (v9), checked by the session
        sent_as = client.next_correlation_id()
        request = build_request(api_key, version, values)
        await client.send(encode_request(request, sent_as, client.client_id))
        task = asyncio.ensure_future(self._answer(client, command, api_key, version, sent_as))
        if isinstance(command, JoinGroup):
            task.add_done_callback(lambda done: self._note_member_id(command.group_id, done))
        self._pending[connection] = task
        return task

    def _note_member_id(self, group_id: str, task: asyncio.Task[object]) -> None:
        """Every member id the broker hands out, pending ones too (MEMBER_ID_REQUIRED): the
        run's clean-up names them in LeaveGroup, as DescribeGroups does not list pending ones."""
        reply = None if task.cancelled() or task.exception() else task.result()
        if isinstance(reply, JoinGroupReply) and reply.member_id:
            self.broker.member_ids.setdefault(group_id, set()).add(reply.member_id)

    @staticmethod
    async def _answer(
        client: WireClient, command: Command[Any], api_key: int, version: int, sent_as: int
    ) -> object:
        correlation_id, response = await client.read_response(api_key, version)
        if correlation_id != sent_as:
            raise ConnectionError(f"correlation id {correlation_id}, expected {sent_as}")
        return reply_of(command, response, _error)

    async def close(self) -> None:
        """Pool the connections that hold no request; close the others."""
        for name, (address, client) in self._connections.items():
            task = self._pending.get(name)
            if task is None or task.done():
                self.pool.give_back(address, client)
            else:
                task.cancel()
                await client.close()
        self._connections.clear()
        self._pending.clear()


def _error(code: Any) -> ErrorCode:
    """A code the model never gives (not in its table) reads as UNKNOWN_SERVER_ERROR, which the
    model never gives either: it still shows as a divergence."""
    try:
        return ErrorCode(int(code))
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
