"""The member's requests as Kafka wire requests, and the wire responses as the core's replies.

The versions are the newest whose semantics the pure member is written for and that every
Kafka broker since 2.4 (and our server) speaks: FindCoordinator v3, JoinGroup v7 (v5+: static
membership; v4+: MEMBER_ID_REQUIRED), SyncGroup v5, Heartbeat v4, LeaveGroup v4, OffsetCommit v8,
OffsetFetch v7, Metadata v12 (topic ids); for KIP-848 members ConsumerGroupHeartbeat v1 (the
member id is the client's) and OffsetCommit v9 (the member epoch in place of the generation).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any, Final

from rebalance.commands import Heartbeat, JoinGroup, LeaveGroup, OffsetCommit, SyncGroup
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.errors import ErrorCode
from rebalance.member.messages import (
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    TopicsDescribed,
)
from rebalance.replies import (
    ConsumerGroupHeartbeatReply,
    HeartbeatReply,
    JoinGroupMember,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    OffsetCommitReply,
    SyncGroupReply,
)

METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = (3, 12), (8, 8), (9, 7), (10, 3)
CONSUMER_GROUP_HEARTBEAT, OFFSET_COMMIT_EPOCH = (68, 1), (8, 9)
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = (11, 7), (12, 4), (13, 4), (14, 5)
JOIN_EXTRA_S: Final = 5.0
"""A JoinGroup may be parked for the rebalance timeout: Java waits that long plus 5 s."""

WireRequest = tuple[tuple[int, int], dict[str, Any]]


def error(value: Any) -> ErrorCode:
    return ErrorCode(int(value))


def to_wire(request: Any) -> WireRequest:
    """(api key, version) and the request's fields for `build_request`."""
    if isinstance(request, FindCoordinator):
        return FIND_COORDINATOR, {"key": request.group_id, "key_type": 0}
    if isinstance(request, DescribeTopics):
        return METADATA, {
            "topics": None
            if request.topics is None
            else [{"name": t, "topic_id": uuid.UUID(int=0)} for t in request.topics],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
    if isinstance(request, JoinGroup):
        return JOIN_GROUP, {
            "group_id": request.group_id,
            "session_timeout": request.session_timeout_ms,
            "rebalance_timeout": request.rebalance_timeout_ms,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "protocol_type": request.protocol_type,
            "protocols": [{"name": n, "metadata": m} for n, m in request.protocols],
        }
    if isinstance(request, SyncGroup):
        return SYNC_GROUP, {
            "group_id": request.group_id,
            "generation_id": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "protocol_type": request.protocol_type,
            "protocol_name": request.protocol_name,
            "assignments": [{"member_id": m, "assignment": a} for m, a in request.assignments],
        }
    if isinstance(request, Heartbeat):
        return HEARTBEAT, {
            "group_id": request.group_id,
            "generation_id": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
        }
    if isinstance(request, LeaveGroup):
        return LEAVE_GROUP, {
            "group_id": request.group_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id}
                for m in request.members
            ],
        }
    if isinstance(request, ConsumerGroupHeartbeat):
        owned = request.topic_partitions
        return CONSUMER_GROUP_HEARTBEAT, {
            "group_id": request.group_id,
            "member_id": request.member_id,
            "member_epoch": request.member_epoch,
            "instance_id": request.instance_id,
            "rack_id": request.rack_id,
            "rebalance_timeout": request.rebalance_timeout_ms,
            "subscribed_topic_names": None
            if request.subscribed_topic_names is None
            else list(request.subscribed_topic_names),
            "subscribed_topic_regex": request.subscribed_topic_regex,
            "server_assignor": request.server_assignor,
            "topic_partitions": None
            if owned is None
            else [{"topic_id": uuid.UUID(t), "partitions": list(ps)} for t, ps in owned],
        }
    if isinstance(request, OffsetCommit):
        api = OFFSET_COMMIT_EPOCH if request.version >= 9 else OFFSET_COMMIT
        return api, {
            "group_id": request.group_id,
            "generation_id_or_member_epoch": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition,
                            "committed_offset": p.offset,
                            "committed_leader_epoch": p.leader_epoch,
                            "committed_metadata": p.metadata,
                        }
                        for p in t.partitions
                    ],
                }
                for t in request.topics
            ],
        }
    raise TypeError(f"no wire form for {type(request).__name__}")


def from_wire(request: Any, response: Any) -> Any:
    """The core's reply type for the wire response to `request`."""
    if isinstance(request, FindCoordinator):
        return FindCoordinatorReply(
            error(response.error_code), int(response.node_id), response.host, int(response.port)
        )
    if isinstance(request, DescribeTopics):
        found = [
            t for t in response.topics if error(t.error_code) is ErrorCode.NONE and t.partitions
        ]
        return TopicsDescribed(
            {str(t.name): len(t.partitions) for t in found},
            {str(t.name): str(t.topic_id) for t in found},
        )
    if isinstance(request, ConsumerGroupHeartbeat):
        assignment = response.assignment
        interval = response.heartbeat_interval
        return ConsumerGroupHeartbeatReply(
            error(response.error_code),
            response.error_message,
            response.member_id,
            int(response.member_epoch),
            int(interval / timedelta(milliseconds=1))
            if isinstance(interval, timedelta)
            else int(interval),
            None
            if assignment is None
            else tuple(
                (str(t.topic_id), tuple(int(p) for p in t.partitions))
                for t in assignment.topic_partitions
            ),
        )
    if isinstance(request, JoinGroup):
        return JoinGroupReply(
            error(response.error_code),
            int(response.generation_id),
            response.protocol_type,
            response.protocol_name,
            response.leader,
            response.member_id,
            bool(getattr(response, "skip_assignment", False)),
            tuple(
                JoinGroupMember(m.member_id, m.group_instance_id, bytes(m.metadata))
                for m in response.members
            ),
        )
    if isinstance(request, SyncGroup):
        return SyncGroupReply(
            error(response.error_code),
            bytes(response.assignment),
            response.protocol_type,
            response.protocol_name,
        )
    if isinstance(request, Heartbeat):
        return HeartbeatReply(error(response.error_code))
    if isinstance(request, LeaveGroup):
        return LeaveGroupReply(
            error(response.error_code),
            tuple(
                LeftMember(m.member_id, m.group_instance_id, error(m.error_code))
                for m in response.members
            ),
        )
    if isinstance(request, OffsetCommit):
        return OffsetCommitReply(
            tuple(
                (t.name, tuple((int(p.partition_index), error(p.error_code)) for p in t.partitions))
                for t in response.topics
            )
        )
    raise TypeError(f"no reply for {type(request).__name__}")


def offset_fetch(group_id: str, partitions: list[tuple[str, int]]) -> WireRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return OFFSET_FETCH, {
        "group_id": group_id,
        "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
        "require_stable": True,
    }
