"""DescribeTopicPartitions (key 75, KIP-966): topics and their partitions, a page at a time.

Versions: v0 only (flexible). Kafka 4's Java admin client describes topics with it (Metadata
only when a broker does not advertise it); librdkafka, kafka-python and aiokafka use Metadata.

Answered as Kafka's `DescribeTopicPartitionsRequestHandler` answers on one broker: the topics
asked for (all of them, internal ones included, when none is named) in name order, from the
`cursor` on, at most `response_partition_limit` partitions (at least one, at most Kafka's
`max.request.partition.size.limit`, 2000) in all; where the page ends `next_cursor` names the
next topic and partition. A cursor past a topic's last partition gives that topic with none. A
cursor naming a topic that is not asked for, or a negative partition, answers every topic asked
for INVALID_REQUEST. An unknown name answers UNKNOWN_TOPIC_OR_PARTITION, an invalid one
INVALID_TOPIC_EXCEPTION, with no partitions. Each partition is led by this node, its only
replica, with empty eligible-leader lists (KIP-966's ELR is off, as on a default broker);
`topic_authorized_operations` is always filled in (every topic operation, without an
authorizer; the authorizer narrows it in `coordinator.node.authorization`).
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero

from coordinator.node.access_control import AccessControl
from coordinator.node.apis.metadata import describe_partition
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import TOPIC, TOPIC_DENIED, may
from coordinator.node.authorization.operations import NOT_REQUESTED, TOPIC_OPERATIONS, authorized
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.partition_log.internal import InternalTopic
from coordinator.partition_log.topics import InvalidTopicError, Topic, check_topic_name
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
VERSIONS = range(0, 1)

# Kafka's `max.request.partition.size.limit` default: no page holds more partitions.
MAX_PARTITIONS_PER_PAGE = 2000


class InvalidCursor(ValueError):
    """The cursor names a topic not asked for, or a negative partition."""


def _partition(index: int, node_id: int) -> dict[str, Any]:
    return {
        **describe_partition(index, node_id),
        "eligible_leader_replicas": [],
        "last_known_elr": [],
    }


def _refused(name: str, code: ErrorCode, operations: int = TOPIC_OPERATIONS) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": uuid_zero,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": operations,
    }


def _unknown(name: str) -> dict[str, Any]:
    try:
        check_topic_name(name)
    except InvalidTopicError:
        return _refused(name, ErrorCode.invalid_topic_exception)
    return _refused(name, ErrorCode.unknown_topic_or_partition)


def _asked_names(request: Any, ctx: RequestContext) -> list[str]:
    """The topic names to describe, in name order, from the cursor's topic on."""
    broker = ctx.broker
    named = [str(t.name) for t in request.topics]
    if named:
        names = sorted(set(named))
    else:
        names = sorted([t.name for t in broker.internal_topics] + [t.name for t in broker.topics])
    cursor = request.cursor
    if cursor is None:
        return names
    if named and str(cursor.topic_name) not in named:
        raise InvalidCursor
    if int(cursor.partition_index) < 0:
        raise InvalidCursor
    return [n for n in names if n >= str(cursor.topic_name)]


def _found(name: str, ctx: RequestContext) -> Topic | InternalTopic | None:
    return ctx.broker.internal_topics.get(name) or ctx.broker.topics.get(name)


def _count(topic: Topic | InternalTopic) -> int:
    return topic.partition_count if isinstance(topic, InternalTopic) else len(topic.partitions)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    try:
        names = _asked_names(request, ctx)
    except InvalidCursor:
        refused = [
            _refused(str(t.name), ErrorCode.invalid_request, NOT_REQUESTED) for t in request.topics
        ]
        return {"throttle_time": 0, "topics": refused, "next_cursor": None}
    node_id = ctx.broker.node_id
    room = max(1, min(int(request.response_partition_limit), MAX_PARTITIONS_PER_PAGE))
    cursor = request.cursor
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        first = int(cursor.partition_index) if cursor and name == cursor.topic_name else 0
        if room <= 0:
            next_cursor = {"topic_name": name, "partition_index": first}
            break
        topic = _found(name, ctx)
        if topic is None:
            topics.append(_unknown(name))
            continue
        count = _count(topic)
        last = min(count, first + room)
        topics.append(
            {
                "error_code": ErrorCode.none,
                "name": name,
                "topic_id": topic.topic_id,
                "is_internal": isinstance(topic, InternalTopic),
                "partitions": [_partition(i, node_id) for i in range(first, last)],
                "topic_authorized_operations": TOPIC_OPERATIONS,
            }
        )
        room -= max(0, last - first)
        if last < count:
            next_cursor = {"topic_name": name, "partition_index": last}
            break
    return {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}


def _visible_topics(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    """DESCRIBE on each topic, as Metadata; an allowed one lists what the client may do.

    DIFFERS: the page is cut before topics are left out, so a page of "all topics" may hold
    fewer partitions than the limit (the cursor still goes on from where it ended)."""
    named = bool(request.topics)
    topics = []
    for topic in answer.get("topics", []):
        name = str(topic["name"])
        if may(access, ctx, Operation.DESCRIBE, TOPIC, name):
            operations = topic.get("topic_authorized_operations", NOT_REQUESTED)
            if operations != NOT_REQUESTED:
                operations = authorized(access, ctx, TOPIC, name, TOPIC_OPERATIONS)
            topics.append({**topic, "topic_authorized_operations": operations})
        elif named:
            topics.append(
                {
                    **topic,
                    "error_code": TOPIC_DENIED,
                    "topic_id": uuid.UUID(int=0),
                    "is_internal": False,
                    "partitions": [],
                    "topic_authorized_operations": NOT_REQUESTED,
                }
            )
    return {**answer, "topics": topics}


AUTHORIZATION = Rule(after=_visible_topics)
