"""The member's requests as Kafka wire requests, and the wire responses as the core's replies.

The versions are the newest whose semantics the pure member is written for and that every
Kafka broker since 2.4 (and our server) speaks: FindCoordinator v3, JoinGroup v7 (v5+: static
membership; v4+: MEMBER_ID_REQUIRED), SyncGroup v5, Heartbeat v4, LeaveGroup v4, OffsetCommit v8,
OffsetFetch v7, Metadata v12 (topic ids); for KIP-848 members ConsumerGroupHeartbeat v1 (the
member id is the client's) and OffsetCommit v9 (the member epoch in place of the generation).
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from coordinator.groups.apis.as_client import api_key_of, reply_of, request_values
from coordinator.wire.api_keys import ApiKey
from rebalance.commands import OffsetCommit
from rebalance.errors import ErrorCode
from rebalance.member.messages import (
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    TopicsDescribed,
)

BROKER_RESOURCE: Final = 4
CONSUMER_SESSION: Final = "group.consumer.session.timeout.ms"
JOIN_EXTRA_S: Final = 5.0
"""A JoinGroup may be parked for the rebalance timeout: Java waits that long plus 5 s."""

VERSIONS: Final[dict[ApiKey, int]] = {
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.METADATA: 12,
    ApiKey.JOIN_GROUP: 7,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 4,
    ApiKey.SYNC_GROUP: 5,
    ApiKey.OFFSET_COMMIT: 8,
    ApiKey.OFFSET_FETCH: 7,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 1,
    ApiKey.DESCRIBE_CONFIGS: 1,
}
"""The version sent of each API (a commit of a KIP-848 member: `OFFSET_COMMIT_EPOCH`)."""
OFFSET_COMMIT_EPOCH: Final = 9

WireRequest = tuple[tuple[ApiKey, int], dict[str, Any]]


def _at(key: ApiKey) -> tuple[ApiKey, int]:
    return key, VERSIONS[key]


def error(value: Any) -> ErrorCode:
    return ErrorCode(int(value))


def to_wire(request: Any) -> WireRequest:
    """(api key, version) and the request's fields for `build_request`."""
    if isinstance(request, FindCoordinator):
        return _at(ApiKey.FIND_COORDINATOR), {"key": request.group_id, "key_type": 0}
    if isinstance(request, DescribeTopics):
        return _at(ApiKey.METADATA), {
            "topics": None
            if request.topics is None
            else [{"name": t, "topic_id": uuid.UUID(int=0)} for t in request.topics],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
    key = api_key_of(request)
    version = VERSIONS[key]
    if isinstance(request, OffsetCommit) and request.version >= 9:
        version = OFFSET_COMMIT_EPOCH  # a KIP-848 member's commit: the member epoch
    return (key, version), request_values(request, version)[1]


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
    return reply_of(request, response)


def offset_fetch(group_id: str, partitions: list[tuple[str, int]]) -> WireRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return _at(ApiKey.OFFSET_FETCH), {
        "group_id": group_id,
        "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
        "require_stable": True,
    }


def describe_broker_config(node_id: int, name: str) -> WireRequest:
    """DescribeConfigs of one setting of broker `node_id` (KIP-848's group settings are the
    broker's; a group's own overrides, Kafka 4.x GROUP resources, are not asked for)."""
    return _at(ApiKey.DESCRIBE_CONFIGS), {
        "resources": [
            {"resource_type": BROKER_RESOURCE, "resource_name": str(node_id),
             "configuration_keys": [name]}
        ],
        "include_synonyms": False,
    }  # fmt: skip


def config_value(response: Any, name: str) -> int | None:
    """The integer value of `name` in a DescribeConfigs response (None: not answered)."""
    for result in response.results:
        if error(result.error_code) is not ErrorCode.NONE:
            return None
        for entry in result.configs:
            if entry.name == name and entry.value is not None and str(entry.value).isdigit():
                return int(entry.value)
    return None
