"""Metadata (key 3): the live nodes as brokers; this node leads every topic partition.

Versions: v1 `topics=null` means all topics (v0: empty list means all), adds controller_id and
is_internal; v2 cluster_id; v3 throttle_time; v4 allow_auto_topic_creation; v5
offline_replicas; v7 leader_epoch; v8 authorized-operations flags; v9 flexible; v10 topic_id in
both directions; v12 topic name nullable in requests (lookup by id only); v13 top-level
error_code. aiokafka sends v5, kafka-python and librdkafka v13. Authorized operations (v8+,
cluster only to v10) are every operation, as without an authorizer
(`coordinator.node.authorization.operations`).

Unknown topics are created when `auto.create.topics.enable` is true and the request allows it
(always below v4; aiokafka/kafka-python allow it, librdkafka does not). Topic ids are real and
stable; an unknown id answers UNKNOWN_TOPIC_ID. Internal topics (`__consumer_offsets`, see
`coordinator.partition_log.internal`) are listed with `is_internal` set, found by name or id, and
never auto-created.

The brokers are the node's `Ownership.live_nodes()` (this node alone without cluster mode),
this one at the address of the listener asked, the lowest node id as controller. A
`__consumer_offsets` partition is led by its owner (LEADER_NOT_AVAILABLE while none holds it):
what a Kafka admin tool reads as the coordinator of the groups placed on it.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero

from coordinator.node.access_control import AccessControl
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import TOPIC, TOPIC_DENIED, may
from coordinator.node.authorization.operations import (
    CLUSTER_OPERATIONS,
    NOT_REQUESTED,
    TOPIC_OPERATIONS,
    cluster_operations,
    if_requested,
    then,
    with_operations,
)
from coordinator.node.contract import Broker, RequestContext, ResponseValue
from coordinator.node.coordinators import controller_id, live_brokers
from coordinator.node.topic_admin import TopicChangeRefused, TopicCollisionError
from coordinator.partition_log.internal import GROUP_METADATA_TOPIC, InternalTopic
from coordinator.partition_log.topics import InvalidTopicError, Topic, check_topic_name
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation, ResourceType

API_KEY = ApiKey.METADATA
VERSIONS = range(0, 14)

NO_AUTHORIZED_OPERATIONS = NOT_REQUESTED
LEADER_EPOCH = 0


def describe_partition(index: int, node_id: int | None) -> dict[str, Any]:
    """A partition as Metadata (and DescribeTopicPartitions) gives it: led by `node_id`, its
    only replica (None: no leader)."""
    if node_id is None:
        return {
            "error_code": ErrorCode.leader_not_available,
            "partition_index": index,
            "leader_id": -1,
            "leader_epoch": -1,
            "replica_nodes": [],
            "isr_nodes": [],
            "offline_replicas": [],
        }
    return {
        "error_code": ErrorCode.none,
        "partition_index": index,
        "leader_id": node_id,
        "leader_epoch": LEADER_EPOCH,
        "replica_nodes": [node_id],
        "isr_nodes": [node_id],
        "offline_replicas": [],
    }


def describe_topic(topic: Topic | InternalTopic, broker: Broker) -> dict[str, Any]:
    internal = isinstance(topic, InternalTopic)
    count = topic.partition_count if isinstance(topic, InternalTopic) else len(topic.partitions)
    leader = _owner_id if topic.name == GROUP_METADATA_TOPIC else _this_node
    partitions = [describe_partition(index, leader(broker, index)) for index in range(count)]
    return {
        "error_code": ErrorCode.none,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": internal,
        "partitions": partitions,
        "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


def _owner_id(broker: Broker, index: int) -> int | None:
    owner = broker.ownership.owner_of(index)
    return None if owner is None else owner.node_id


def _this_node(broker: Broker, index: int) -> int | None:
    return broker.node_id


def partition_count(name: str, ctx: RequestContext) -> int | None:
    """How many partitions the topic `name` has (an internal one too), None if there is none."""
    internal = ctx.broker.internal_topics.get(name)
    if internal is not None:
        return internal.partition_count
    topic = ctx.broker.topics.get(name)
    return None if topic is None else len(topic.partitions)


def _missing(code: ErrorCode, name: str | None, topic_id: uuid.UUID | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id or uuid_zero,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


async def _requested_topic(
    name: str | None, topic_id: uuid.UUID | None, may_create: bool, ctx: RequestContext
) -> dict[str, Any]:
    broker = ctx.broker
    if name is None:
        found: Topic | InternalTopic | None = None
        if topic_id:
            found = broker.internal_topics.by_id(topic_id) or broker.topics.by_id(topic_id)
            found = found or await broker.topic_admin.find(None, topic_id)
        if found is None:
            return _missing(ErrorCode.unknown_topic_id, None, topic_id)
        return describe_topic(found, broker)
    internal = broker.internal_topics.get(name)
    if internal is not None:
        return describe_topic(internal, broker)
    topic = broker.topics.get(name)
    if topic is None:
        try:
            check_topic_name(name)
        except InvalidTopicError:
            return _missing(ErrorCode.invalid_topic_exception, name, None)
        # Cluster mode: made on another node a moment ago, before this node heard of it.
        topic = await broker.topic_admin.find(name, None)
    if topic is None:
        if not (may_create and broker.config.auto_create_topics_enable):
            return _missing(ErrorCode.unknown_topic_or_partition, name, None)
        try:
            topic = await broker.topic_admin.create(name, broker.config.num_partitions)
        except TopicCollisionError:
            return _missing(ErrorCode.invalid_topic_exception, name, None)
        except TopicChangeRefused:  # the cluster's catalogue is out of reach: try again
            return _missing(ErrorCode.leader_not_available, name, None)
    return describe_topic(topic, broker)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    broker = ctx.broker
    requested = request.topics
    wants_all = requested is None or (api_version == 0 and not requested)
    may_create = api_version < 4 or bool(getattr(request, "allow_auto_topic_creation", True))
    if wants_all:
        every: list[Topic | InternalTopic] = [*broker.internal_topics, *broker.topics]
        topics = [describe_topic(topic, broker) for topic in every]
    else:
        topics = [
            await _requested_topic(t.name, getattr(t, "topic_id", None), may_create, ctx)
            for t in requested
        ]
    if getattr(request, "include_topic_authorized_operations", False):
        for topic in topics:
            if topic["name"] is not None:  # Kafka leaves unknown topic ids out
                topic["topic_authorized_operations"] = TOPIC_OPERATIONS
    asked_cluster = getattr(request, "include_cluster_authorized_operations", False)
    brokers = live_brokers(ctx)
    return {
        "throttle_time": 0,
        "brokers": [
            {"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
            for node in brokers
        ],
        "cluster_id": broker.config.cluster_id,
        "controller_id": controller_id(brokers),
        "topics": topics,
        "cluster_authorized_operations": if_requested(asked_cluster, CLUSTER_OPERATIONS),
        "error_code": ErrorCode.none,
    }


def _topics(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    """DESCRIBE on each topic: TOPIC_AUTHORIZATION_FAILED for a topic asked for by name, left out
    of "all topics"."""
    named = request.topics is not None and not (version == 0 and not request.topics)
    topics = []
    for topic in answer.get("topics", []):
        name = topic.get("name")
        if name is None or may(access, ctx, Operation.DESCRIBE, TOPIC, name):
            topics.append(topic)
        elif named:
            topics.append(
                {**topic, "error_code": TOPIC_DENIED, "partitions": [], "is_internal": False}
            )
    return {**answer, "topics": topics}


AUTHORIZATION = Rule(
    after=then(
        _topics,
        with_operations(
            "topic_authorized_operations", ResourceType.TOPIC, TOPIC_OPERATIONS, "name"
        ),
        cluster_operations,
    )
)
