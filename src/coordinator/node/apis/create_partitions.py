"""CreatePartitions (key 37): give topics more partitions (never fewer).

Versions: v0-v1 the same fields; v2 flexible; v3 the same as v2. aiokafka and kafka-python send
v0-v1, librdkafka v0-v3.

New partitions are empty logs led by this node and appear in Metadata at once. Consumer groups
subscribed to the topic rebalance onto them as they do on any metadata change: each consumer
refreshes its metadata (every `metadata.max.age.ms`), the change in partition count makes it
rejoin, and the assignor hands the new partitions out. Errors, per topic as Kafka gives them: a
topic asked twice INVALID_REQUEST; an unknown one UNKNOWN_TOPIC_OR_PARTITION; a count not above
the current one INVALID_PARTITIONS; assignments that are not one list of this node per new
partition INVALID_REPLICA_ASSIGNMENT. `validate_only` answers the same without growing anything.

DIFFERS: the internal `__consumer_offsets` cannot grow (INVALID_TOPIC_EXCEPTION): its partition
count is `offsets.topic.num.partitions`, by which the coordinator places groups. Kafka would
grow it and so move groups to other partitions.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.create_topics import MAX_PARTITIONS, TopicRefused, refusal
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import TOPIC_DENIED, per_entry, topic_operation
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.node.topic_admin import TopicChangeRefused
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.CREATE_PARTITIONS
VERSIONS = range(0, 4)

#: ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED for it.
AUTHORIZATION = Rule(
    per_entry(
        "topics",
        "results",
        topic_operation(
            Operation.ALTER,
            lambda t: {"name": t.name, "error_code": TOPIC_DENIED, "error_message": None},
        ),
    )
)


def _check_assignments(request: Any, added: int, node_id: int) -> None:
    if request.assignments is None:
        return
    if len(request.assignments) != added:
        raise TopicRefused(
            ErrorCode.invalid_replica_assignment,
            f"Increasing the number of partitions by {added} but {len(request.assignments)} "
            f"assignments provided.",
        )
    for assignment in request.assignments:
        brokers = [int(b) for b in assignment.broker_ids]
        if brokers != [node_id]:
            raise TopicRefused(
                ErrorCode.invalid_replica_assignment,
                f"The manual partition assignment {brokers} does not have the topic's one "
                f"replica on this cluster's only broker, {node_id}.",
            )


async def _grow(request: Any, validate_only: bool, ctx: RequestContext) -> None:
    topics = ctx.broker.topics
    if str(request.name) in ctx.broker.internal_topics:
        raise TopicRefused(
            ErrorCode.invalid_topic_exception,
            f"Topic {request.name} is internal: its partition count is "
            f"offsets.topic.num.partitions.",
        )
    # Cluster mode: made on another node a moment ago, before this node heard of it.
    topic = topics.get(str(request.name)) or await ctx.broker.topic_admin.find(
        str(request.name), None
    )
    if topic is None:
        raise TopicRefused(
            ErrorCode.unknown_topic_or_partition, f"The topic '{request.name}' does not exist."
        )
    current, wanted = len(topic.partitions), int(request.count)
    if wanted == current:
        raise TopicRefused(ErrorCode.invalid_partitions, f"Topic already has {current} partitions.")
    if wanted < current:
        raise TopicRefused(
            ErrorCode.invalid_partitions,
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{wanted}.",
        )
    if wanted > MAX_PARTITIONS:
        raise TopicRefused(
            ErrorCode.invalid_partitions,
            f"Number of partitions must be at most {MAX_PARTITIONS} on this node.",
        )
    _check_assignments(request, wanted - current, ctx.broker.node_id)
    if not validate_only:
        try:
            await ctx.broker.topic_admin.add_partitions(topic, wanted)
        except TopicChangeRefused as exc:  # another node grew or deleted it a moment ago
            raise refusal(exc) from None


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    counts = Counter(str(t.name) for t in request.topics)
    results = []
    for topic in request.topics:
        name = str(topic.name)
        code, message = ErrorCode.none, None
        try:
            if counts[name] > 1:
                raise TopicRefused(ErrorCode.invalid_request, "Duplicate topic in request.")
            await _grow(topic, bool(request.validate_only), ctx)
        except TopicRefused as exc:
            code, message = exc.code, exc.message
        results.append({"name": name, "error_code": code, "error_message": message})
    return {"throttle_time": 0, "results": results}
