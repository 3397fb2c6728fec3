"""The broker side of the differential run: the core's commands sent over the wire, the broker's
responses read back as the core's replies, so both sides answer in one vocabulary.

Requests go at the versions `BrokerUnderTest` negotiated (the model is told the same versions).
A member's JoinGroup and SyncGroup go over its own connection, where they may park, as a
consumer's do; everything else goes over its group's admin connection, which never waits.
Connections are pooled across runs: one still holding a parked request is closed instead.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from coordinator.conformance.broker import (
    CONSUMER_GROUP_HEARTBEAT,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
    BrokerUnderTest,
)
from coordinator.wire.client import WireClient
from coordinator.wire.codec import build_request, encode_request
from rebalance.commands import (
    Command,
    DescribeGroups,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
)
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.errors import ErrorCode
from rebalance.replies import (
    AnyReply,
    ConsumerGroupHeartbeatReply,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsReply,
    FetchedOffset,
    HeartbeatReply,
    JoinGroupMember,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    OffsetCommitReply,
    OffsetFetchReply,
    SyncGroupReply,
)

CLIENT_ID = "rebalance-conformance"


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
        version = self.broker.versions.get(FIND_COORDINATOR)
        if version is None:
            return bootstrap
        client = await self.take(bootstrap)
        try:
            values: dict[str, Any] = {"key_type": 0}
            values |= {"coordinator_keys": [group_id]} if version >= 4 else {"key": group_id}
            found = await client.request(FIND_COORDINATOR, version, values)
        finally:
            self.give_back(bootstrap, client)
        if version >= 4:
            (found,) = found.coordinators
        return (found.host, found.port)

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
        self._pending: dict[str, asyncio.Task[AnyReply]] = {}

    async def open(self, names: dict[str, str]) -> None:
        """Connect each name (a slot, or a group's admin) to its group's coordinator."""
        addresses: dict[str, tuple[str, int]] = {}
        for name, group_id in names.items():
            if group_id not in addresses:
                addresses[group_id] = await self.pool.coordinator(group_id)
            address = addresses[group_id]
            self._connections[name] = (address, await self.pool.take(address))

    async def send(self, connection: str, command: Command[Any]) -> asyncio.Task[AnyReply]:
        """Write the request now (it reaches the broker before anything sent later), and read
        its answer in a task: it may be parked."""
        _, client = self._connections[connection]
        api_key, values = to_request(command, self.broker.versions)
        version = self.broker.versions[api_key]
        if isinstance(command, OffsetCommit) and command.version > version:
            version = command.version  # a KIP-848 commit (v9), checked by the session
        sent_as = client.next_correlation_id()
        request = build_request(api_key, version, values)
        await client.send(encode_request(request, sent_as, client.client_id))
        task = asyncio.ensure_future(self._answer(client, command, api_key, version, sent_as))
        self._pending[connection] = task
        return task

    @staticmethod
    async def _answer(
        client: WireClient, command: Command[Any], api_key: int, version: int, sent_as: int
    ) -> AnyReply:
        correlation_id, response = await client.read_response(api_key, version)
        if correlation_id != sent_as:
            raise ConnectionError(f"correlation id {correlation_id}, expected {sent_as}")
        return to_reply(command, response)

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


def to_request(command: Command[Any], versions: dict[int, int]) -> tuple[int, dict[str, Any]]:
    """The API key and request values for `command` (kio fills what a version lacks)."""
    if isinstance(command, JoinGroup):
        return JOIN_GROUP, {
            "group_id": command.group_id,
            "session_timeout": command.session_timeout_ms,
            "rebalance_timeout": command.rebalance_timeout_ms,
            "member_id": command.member_id,
            "group_instance_id": command.group_instance_id,
            "protocol_type": command.protocol_type,
            "protocols": [{"name": n, "metadata": m} for n, m in command.protocols],
            "reason": command.reason,
        }
    if isinstance(command, SyncGroup):
        return SYNC_GROUP, {
            "group_id": command.group_id,
            "generation_id": command.generation_id,
            "member_id": command.member_id,
            "group_instance_id": command.group_instance_id,
            "protocol_type": command.protocol_type,
            "protocol_name": command.protocol_name,
            "assignments": [{"member_id": m, "assignment": a} for m, a in command.assignments],
        }
    if isinstance(command, Heartbeat):
        return HEARTBEAT, {
            "group_id": command.group_id,
            "generation_id": command.generation_id,
            "member_id": command.member_id,
            "group_instance_id": command.group_instance_id,
        }
    if isinstance(command, LeaveGroup):
        values: dict[str, Any] = {"group_id": command.group_id}
        if versions[LEAVE_GROUP] >= 3:
            values["members"] = [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "reason": m.reason}
                for m in command.members
            ]  # fmt: skip
        else:
            (only,) = command.members
            values["member_id"] = only.member_id
        return LEAVE_GROUP, values
    if isinstance(command, OffsetCommit):
        return OFFSET_COMMIT, {
            "group_id": command.group_id,
            "generation_id_or_member_epoch": command.generation_id,
            "generation_id": command.generation_id,
            "member_id": command.member_id,
            "group_instance_id": command.group_instance_id,
            "retention_time": command.retention_time_ms,
            "topics": [
                {"name": t.name, "partitions": [
                    {"partition_index": p.partition, "committed_offset": p.offset,
                     "committed_leader_epoch": p.leader_epoch, "committed_metadata": p.metadata,
                     "commit_timestamp": p.commit_timestamp_ms}
                    for p in t.partitions
                ]}
                for t in command.topics
            ],
        }  # fmt: skip
    if isinstance(command, OffsetFetch):
        assert command.topics is not None
        return OFFSET_FETCH, {
            "group_id": command.group_id,
            "topics": [{"name": t, "partition_indexes": list(ps)} for t, ps in command.topics],
            "require_stable": command.require_stable,
        }
    if isinstance(command, ConsumerGroupHeartbeat):
        owned = command.topic_partitions
        return CONSUMER_GROUP_HEARTBEAT, {
            "group_id": command.group_id,
            "member_id": command.member_id,
            "member_epoch": command.member_epoch,
            "instance_id": command.instance_id,
            "rack_id": command.rack_id,
            "rebalance_timeout": command.rebalance_timeout_ms,
            "subscribed_topic_names": (
                None if command.subscribed_topic_names is None
                else list(command.subscribed_topic_names)
            ),
            "subscribed_topic_regex": command.subscribed_topic_regex,
            "server_assignor": command.server_assignor,
            "topic_partitions": None if owned is None else [
                {"topic_id": uuid.UUID(t), "partitions": list(ps)} for t, ps in owned
            ],
        }  # fmt: skip
    if isinstance(command, DescribeGroups):
        return DESCRIBE_GROUPS, {
            "groups": list(command.group_ids),
            "include_authorized_operations": False,
        }
    raise TypeError(f"no wire form for {type(command).__name__}")


def _error(code: Any) -> ErrorCode:
    """A code the model never gives (not in its table) reads as UNKNOWN_SERVER_ERROR, which the
    model never gives either: it still shows as a divergence."""
    try:
        return ErrorCode(int(code))
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def to_reply(command: Command[Any], r: Any) -> AnyReply:
    """The broker's response as the reply the core gives (fields a version lacks: defaults)."""
    if isinstance(command, JoinGroup):
        return JoinGroupReply(
            _error(r.error_code),
            generation_id=r.generation_id,
            protocol_type=getattr(r, "protocol_type", None),
            protocol_name=r.protocol_name,
            leader=r.leader,
            member_id=r.member_id,
            members=tuple(
                JoinGroupMember(m.member_id, getattr(m, "group_instance_id", None), m.metadata)
                for m in r.members
            ),
        )
    if isinstance(command, SyncGroup):
        return SyncGroupReply(
            _error(r.error_code),
            bytes(r.assignment),
            getattr(r, "protocol_type", None),
            getattr(r, "protocol_name", None),
        )
    if isinstance(command, Heartbeat):
        return HeartbeatReply(_error(r.error_code))
    if isinstance(command, LeaveGroup):
        members = tuple(
            LeftMember(m.member_id, m.group_instance_id, _error(m.error_code))
            for m in getattr(r, "members", ())
        )
        return LeaveGroupReply(_error(r.error_code), members)
    if isinstance(command, OffsetCommit):
        return OffsetCommitReply(
            tuple(
                (t.name, tuple((p.partition_index, _error(p.error_code)) for p in t.partitions))
                for t in r.topics
            )
        )
    if isinstance(command, OffsetFetch):
        return OffsetFetchReply(
            _error(getattr(r, "error_code", 0)),
            tuple(
                (t.name, tuple(
                    FetchedOffset(p.partition_index, p.committed_offset,
                                  getattr(p, "committed_leader_epoch", -1), p.metadata or "",
                                  _error(p.error_code))
                    for p in t.partitions
                ))
                for t in r.topics
            ),
        )  # fmt: skip
    if isinstance(command, ConsumerGroupHeartbeat):
        assignment = None
        if r.assignment is not None:
            assignment = tuple(
                (str(t.topic_id), tuple(int(p) for p in t.partitions))
                for t in r.assignment.topic_partitions
            )
        return ConsumerGroupHeartbeatReply(
            _error(r.error_code),
            r.error_message,
            r.member_id,
            r.member_epoch,
            int(r.heartbeat_interval.total_seconds() * 1000),
            assignment,
        )
    if isinstance(command, DescribeGroups):
        return DescribeGroupsReply(
            tuple(
                DescribedGroup(
                    g.group_id, _error(g.error_code), g.group_state, g.protocol_type,
                    g.protocol_data,
                    tuple(
                        DescribedMember(m.member_id, getattr(m, "group_instance_id", None),
                                        m.client_id, m.client_host, bytes(m.member_metadata),
                                        bytes(m.member_assignment))
                        for m in g.members
                    ),
                )
                for g in r.groups
            )
        )  # fmt: skip
    raise TypeError(f"no reply form for {type(command).__name__}")
