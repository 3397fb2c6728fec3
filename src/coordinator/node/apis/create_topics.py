"""CreateTopics (key 19): create topics on this node, or only check that they could be.

Versions: kio's floor is v2 (Kafka 4 dropped v0-1); v4 lets num_partitions and
replication_factor be -1 (the broker's `num.partitions`; replication 1); v5 is flexible and
answers num_partitions, replication_factor and the topic's configs; v7 the topic id. aiokafka
and kafka-python send v3, librdkafka v4.

Rules, as Kafka's controller applies them, each failing only its own topic: a name used twice in
one request fails every entry with INVALID_REQUEST; an illegal name, or one that collides with an
existing topic once '.' and '_' are treated alike, INVALID_TOPIC_EXCEPTION; an existing name
TOPIC_ALREADY_EXISTS; a partition count below 1 INVALID_PARTITIONS; a replication factor below 1,
or above the one broker there is, INVALID_REPLICATION_FACTOR; a replica assignment together with
a partition count or replication factor INVALID_REQUEST, one that is not partitions 0..n-1 on
this node with one replication factor INVALID_REPLICA_ASSIGNMENT; an unknown or bad config
INVALID_CONFIG. `validate_only` answers the same without creating anything.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero

from coordinator.node.access_control import AccessControl
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import (
    TOPIC,
    TOPIC_DENIED,
    may,
    may_on_cluster,
    per_entry,
)
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.node.topic_admin import (
    PartitionCountError,
    TopicChangeRefused,
    TopicCollisionError,
    TopicExistsError,
    UnknownTopicError,
)
from coordinator.partition_log.topic_configs import (
    InvalidConfigError,
    describe_topic_configs,
    validate_topic_configs,
)
from coordinator.partition_log.topics import InvalidTopicError, check_topic_name
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = range(2, 8)

DEFAULT = -1
MAX_PARTITIONS = 100_000
"""More partitions than `num.partitions` may be set to: each is an open file on this node."""


class TopicRefused(Exception):
    """One topic of the request cannot be created: its error code and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


def _layout(topic: Any, default_partitions: int, node_id: int) -> tuple[int, int]:
    """(partitions, replication factor) the request asks for, or `TopicRefused`."""
    assignments = list(topic.assignments or ())
    if assignments:
        if topic.num_partitions != DEFAULT or topic.replication_factor != DEFAULT:
            raise TopicRefused(
                ErrorCode.invalid_request,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        indexes = sorted(int(a.partition_index) for a in assignments)
        if indexes != list(range(len(indexes))):
            raise TopicRefused(
                ErrorCode.invalid_replica_assignment,
                "Partitions should be a consecutive 0-based integer sequence",
            )
        factors = {len(a.broker_ids) for a in assignments}
        for assignment in assignments:
            brokers = [int(b) for b in assignment.broker_ids]
            if not brokers or len(set(brokers)) != len(brokers):
                raise TopicRefused(
                    ErrorCode.invalid_replica_assignment,
                    f"Duplicate or missing brokers in the assignment of partition "
                    f"{assignment.partition_index}: {brokers}",
                )
            if any(b != node_id for b in brokers):
                raise TopicRefused(
                    ErrorCode.invalid_replica_assignment,
                    f"The manual partition assignment includes broker(s) that are not on this "
                    f"cluster (its only broker is {node_id}): {brokers}",
                )
        if len(factors) != 1:
            raise TopicRefused(
                ErrorCode.invalid_replica_assignment,
                "All partitions should have the same number of replicas",
            )
        return len(indexes), factors.pop()
    partitions = int(topic.num_partitions)
    if partitions == DEFAULT:
        partitions = default_partitions
    if partitions < 1 or partitions > MAX_PARTITIONS:
        raise TopicRefused(
            ErrorCode.invalid_partitions,
            "Number of partitions must be larger than 0."
            if partitions < 1
            else f"Number of partitions must be at most {MAX_PARTITIONS} on this node.",
        )
    factor = int(topic.replication_factor)
    if factor == DEFAULT:
        # Deliberately not `default.replication.factor`: on one node only 1 can be met.
        factor = 1
    if factor < 1:
        raise TopicRefused(
            ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0."
        )
    if factor > 1:
        raise TopicRefused(
            ErrorCode.invalid_replication_factor,
            f"Unable to replicate the partition {factor} time(s): The target replication factor "
            f"of {factor} cannot be reached because only 1 broker(s) are registered.",
        )
    return partitions, factor


def _configs(topic: Any) -> dict[str, str]:
    names = Counter(c.name for c in topic.configs or ())
    repeated = sorted(name for name, count in names.items() if count > 1)
    if repeated:
        raise TopicRefused(
            ErrorCode.invalid_config, f"Duplicate config names in the request: {repeated}"
        )
    try:
        return validate_topic_configs({c.name: c.value for c in topic.configs or ()})
    except InvalidConfigError as exc:
        raise TopicRefused(ErrorCode.invalid_config, str(exc)) from None


def _check_name(name: str, ctx: RequestContext) -> None:
    try:
        check_topic_name(name)
    except InvalidTopicError:
        raise TopicRefused(
            ErrorCode.invalid_topic_exception,
            f"Topic name {name!r} is illegal, it contains a character other than ASCII "
            f"alphanumerics, '.', '_' and '-', or is empty, '.', '..' or longer than 249",
        ) from None
    if ctx.broker.topics.get(name) is not None or name in ctx.broker.internal_topics:
        raise TopicRefused(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    key = _collision_key(name)
    for existing in ctx.broker.topics:
        if _collision_key(existing.name) == key:
            raise TopicRefused(
                ErrorCode.invalid_topic_exception,
                f"Topic '{name}' collides with existing topic: {existing.name}",
            )


def refusal(exc: TopicChangeRefused) -> TopicRefused:
    """What the topic admin refused (a change another node made first), as Kafka answers it."""
    if isinstance(exc, TopicExistsError):
        return TopicRefused(ErrorCode.topic_already_exists, str(exc))
    if isinstance(exc, TopicCollisionError):
        return TopicRefused(ErrorCode.invalid_topic_exception, str(exc))
    if isinstance(exc, UnknownTopicError):
        return TopicRefused(ErrorCode.unknown_topic_or_partition, str(exc))
    if isinstance(exc, PartitionCountError):
        return TopicRefused(ErrorCode.invalid_partitions, str(exc))
    return TopicRefused(ErrorCode.request_timed_out, str(exc))


async def _create(topic: Any, validate_only: bool, ctx: RequestContext) -> dict[str, Any]:
    broker = ctx.broker
    name = str(topic.name)
    _check_name(name, ctx)
    partitions, factor = _layout(topic, broker.config.num_partitions, broker.node_id)
    configs = _configs(topic)
    topic_id = uuid_zero
    if not validate_only:
        try:
            created = await broker.topic_admin.create(name, partitions, configs, new=True)
        except TopicChangeRefused as exc:
            raise refusal(exc) from None
        topic_id = created.topic_id
    described = describe_topic_configs(configs, broker.settings.explicit())
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": ErrorCode.none,
        "error_message": None,
        "num_partitions": partitions,
        "replication_factor": factor,
        "configs": [
            {
                "name": entry.name,
                "value": entry.value,
                "read_only": entry.read_only,
                "config_source": int(entry.source),
                "is_sensitive": False,
            }
            for entry in described
        ],
    }


def _refused(name: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": uuid_zero,
        "error_code": code,
        "error_message": message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    counts = Counter(str(t.name) for t in request.topics)
    results = []
    for topic in request.topics:
        name = str(topic.name)
        if counts[name] > 1:
            results.append(
                _refused(name, ErrorCode.invalid_request, "Found multiple entries for this topic.")
            )
            continue
        try:
            results.append(await _create(topic, bool(request.validate_only), ctx))
        except TopicRefused as exc:
            results.append(_refused(name, exc.code, exc.message))
        except OSError as exc:  # disk full: nothing of the topic is left (TopicStore.create)
            message = f"not created: {exc.strerror or exc}"
            results.append(_refused(name, ErrorCode.kafka_storage_error, message))
    return {"throttle_time": 0, "topics": results}


def _denial(topic: Any, ctx: RequestContext, access: AccessControl) -> Any:
    name = str(topic.name)
    if may_on_cluster(access, ctx, Operation.CREATE) or may(
        access, ctx, Operation.CREATE, TOPIC, name
    ):
        return None
    return {
        "name": name,
        "error_code": TOPIC_DENIED,
        "error_message": "Authorization failed.",
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }


#: CREATE on the cluster or the topic, else TOPIC_AUTHORIZATION_FAILED for it.
AUTHORIZATION = Rule(per_entry("topics", "topics", _denial))
