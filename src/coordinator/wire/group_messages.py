"""The core's group commands as Kafka requests, and Kafka responses as the core's replies.

Everything in this project that speaks to a group coordinator as a client does it with the core's
own values: the member library (`coordinator.clients.member`) sends what the pure member decides,
the conformance run (`coordinator.conformance`) sends what it also hands to the core as its model.
Both translate here, in one place, to the version-agnostic dicts `codec.build_request` fills a
request class from (a field the version lacks is dropped there), and back from a decoded response
(a field the version lacks reads as its default here).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Final

from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupMember,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    SyncGroupReply,
)
from rebalance.commands import Command, DescribeGroups, OffsetCommit, OffsetFetch
from rebalance.consumer_group.commands import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import (
    ConsumerGroupDescribeReply,
    ConsumerGroupHeartbeatReply,
    DescribedConsumerGroup,
    DescribedConsumerMember,
)
from rebalance.errors import ErrorCode
from rebalance.replies import (
    DescribedGroup,
    DescribedMember,
    DescribeGroupsReply,
    FetchedOffset,
    OffsetCommitReply,
    OffsetFetchReply,
)

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT = 8, 9, 11, 12
LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, CONSUMER_GROUP_HEARTBEAT = 13, 14, 15, 68
CONSUMER_GROUP_DESCRIBE = 69
API_KEYS: Final[dict[type[Any], int]] = {
    OffsetCommit: OFFSET_COMMIT, OffsetFetch: OFFSET_FETCH, JoinGroup: JOIN_GROUP,
    Heartbeat: HEARTBEAT, LeaveGroup: LEAVE_GROUP, SyncGroup: SYNC_GROUP,
    DescribeGroups: DESCRIBE_GROUPS, ConsumerGroupHeartbeat: CONSUMER_GROUP_HEARTBEAT,
    ConsumerGroupDescribe: CONSUMER_GROUP_DESCRIBE,
}  # fmt: skip

ErrorReader = Callable[[Any], ErrorCode]


def strict_error(value: Any) -> ErrorCode:
    """An error code the core knows (ValueError for one it does not)."""
    return ErrorCode(int(value))


def api_key_of(command: Command[Any]) -> int:
    """The API that carries `command`."""
    try:
        return API_KEYS[type(command)]
    except KeyError:
        raise TypeError(f"no wire form for {type(command).__name__}") from None


def request_values(command: Command[Any], version: int) -> tuple[int, dict[str, Any]]:
    """The API key of `command` and its fields for `build_request` at `version` of that API
    (only LeaveGroup changes shape: one member id before v3, a list of members from v3)."""
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
        if version < 3:
            (only,) = command.members
            return LEAVE_GROUP, {"group_id": command.group_id, "member_id": only.member_id}
        return LEAVE_GROUP, {
            "group_id": command.group_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "reason": m.reason}
                for m in command.members
            ],
        }  # fmt: skip
    if isinstance(command, OffsetCommit):
        return OFFSET_COMMIT, {
            "group_id": command.group_id,
            "generation_id_or_member_epoch": command.generation_id,
            "generation_id": command.generation_id,  # the field's name before v9
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
        if command.topics is None:
            raise TypeError("an OffsetFetch of all topics has no wire form here")
        return OFFSET_FETCH, {
            "group_id": command.group_id,
            "topics": [{"name": t, "partition_indexes": list(ps)} for t, ps in command.topics],
            "require_stable": command.require_stable,
        }
    if isinstance(command, ConsumerGroupHeartbeat):
        owned = command.topic_partitions
        names = command.subscribed_topic_names
        return CONSUMER_GROUP_HEARTBEAT, {
            "group_id": command.group_id,
            "member_id": command.member_id,
            "member_epoch": command.member_epoch,
            "instance_id": command.instance_id,
            "rack_id": command.rack_id,
            "rebalance_timeout": command.rebalance_timeout_ms,
            "subscribed_topic_names": None if names is None else list(names),
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
    if isinstance(command, ConsumerGroupDescribe):
        return CONSUMER_GROUP_DESCRIBE, {
            "group_ids": list(command.group_ids),
            "include_authorized_operations": False,
        }
    raise TypeError(f"no wire form for {type(command).__name__}")


def _milliseconds(value: Any) -> int:
    """kio decodes duration fields as `timedelta`."""
    return int(value / timedelta(milliseconds=1)) if isinstance(value, timedelta) else int(value)


def reply_of(command: Command[Any], r: Any, error: ErrorReader = strict_error) -> object:
    """The reply the core gives to `command`, read from the broker's decoded response `r`."""
    if isinstance(command, JoinGroup):
        return JoinGroupReply(
            error(r.error_code),
            generation_id=int(r.generation_id),
            protocol_type=getattr(r, "protocol_type", None),
            protocol_name=r.protocol_name,
            leader=r.leader,
            member_id=r.member_id,
            skip_assignment=bool(getattr(r, "skip_assignment", False)),
            members=tuple(
                JoinGroupMember(m.member_id, getattr(m, "group_instance_id", None),
                                bytes(m.metadata))
                for m in r.members
            ),
        )  # fmt: skip
    if isinstance(command, SyncGroup):
        return SyncGroupReply(
            error(r.error_code),
            bytes(r.assignment),
            getattr(r, "protocol_type", None),
            getattr(r, "protocol_name", None),
        )
    if isinstance(command, Heartbeat):
        return HeartbeatReply(error(r.error_code))
    if isinstance(command, LeaveGroup):
        members = tuple(
            LeftMember(m.member_id, m.group_instance_id, error(m.error_code))
            for m in getattr(r, "members", ())
        )
        return LeaveGroupReply(error(r.error_code), members)
    if isinstance(command, OffsetCommit):
        return OffsetCommitReply(
            tuple(
                (t.name, tuple((int(p.partition_index), error(p.error_code)) for p in t.partitions))
                for t in r.topics
            )
        )
    if isinstance(command, OffsetFetch):
        return OffsetFetchReply(
            error(getattr(r, "error_code", 0)),
            tuple(
                (t.name, tuple(
                    FetchedOffset(p.partition_index, p.committed_offset,
                                  getattr(p, "committed_leader_epoch", -1), p.metadata or "",
                                  error(p.error_code))
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
            error(r.error_code),
            r.error_message,
            r.member_id,
            int(r.member_epoch),
            _milliseconds(r.heartbeat_interval),
            assignment,
        )
    if isinstance(command, DescribeGroups):
        return DescribeGroupsReply(
            tuple(
                DescribedGroup(
                    g.group_id, error(g.error_code), g.group_state, g.protocol_type,
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
    if isinstance(command, ConsumerGroupDescribe):
        return ConsumerGroupDescribeReply(
            tuple(
                DescribedConsumerGroup(
                    g.group_id, error(g.error_code), g.error_message, g.group_state,
                    int(g.group_epoch), int(g.assignment_epoch), g.assignor_name,
                    tuple(_described_consumer_member(m) for m in g.members),
                )
                for g in r.groups
            )
        )  # fmt: skip
    raise TypeError(f"no reply form for {type(command).__name__}")


#: ConsumerGroupDescribe v1's MemberType of a classic member (online migration).
_CLASSIC_MEMBER_TYPE = 0


def _described_consumer_member(m: Any) -> DescribedConsumerMember:
    def named(assignment: Any) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
        return tuple(
            (str(t.topic_id), t.topic_name, tuple(int(p) for p in t.partitions))
            for t in assignment.topic_partitions
        )

    return DescribedConsumerMember(
        m.member_id, m.instance_id, m.rack_id, int(m.member_epoch), m.client_id, m.client_host,
        tuple(m.subscribed_topic_names), m.subscribed_topic_regex, named(m.assignment),
        named(m.target_assignment),
        classic=getattr(m, "member_type", -1) == _CLASSIC_MEMBER_TYPE,
    )  # fmt: skip
