"""AlterPartitionReassignments (key 45, KIP-455): move partitions to other replicas.

Versions: v0 flexible from the start; v1 allow_replication_factor_change (KIP-860), echoed in
the answer. The Java admin client's `alterPartitionReassignments` and
`kafka-reassign-partitions.sh --execute` send it.

Answered per partition as Kafka's controller answers on a one-broker cluster: the only replica
set a partition can have is this node alone, so asking for it completes at once (NONE, nothing
to move) and any other is INVALID_REPLICA_ASSIGNMENT, with Kafka's messages (an empty list, a
broker twice, a broker that is not registered, each checked over the whole list in that order);
cancelling (`replicas` null) is NO_REASSIGNMENT_IN_PROGRESS, since none ever is; an unknown
topic or partition UNKNOWN_TOPIC_OR_PARTITION. Without ALTER on the cluster (when an authorizer
runs) every partition is refused CLUSTER_AUTHORIZATION_FAILED (`coordinator.node.authorization`).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.metadata import partition_count
from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 45
VERSIONS = range(0, 2)


def _replicas_refused(replicas: list[int], node_id: int) -> str | None:
    """Kafka's complaint about a replica list on this cluster, or None when it is this node."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    seen: set[int] = set()
    for broker in replicas:
        if broker in seen:
            return f"The manual partition assignment includes the broker {broker} more than once."
        seen.add(broker)
    for broker in replicas:
        if broker != node_id:
            return (
                f"The manual partition assignment includes broker {broker}, but no such broker "
                "is registered."
            )
    return None


def _answer(topic: str, partition: Any, ctx: RequestContext) -> dict[str, Any]:
    index = int(partition.partition_index)
    count = partition_count(topic, ctx)
    code, message = ErrorCode.none, None
    if count is None:
        code, message = (
            ErrorCode.unknown_topic_or_partition,
            f"Unable to find a topic named {topic}.",
        )
    elif not 0 <= index < count:
        code, message = (
            ErrorCode.unknown_topic_or_partition,
            f"Unable to find partition {topic}:{index}.",
        )
    elif partition.replicas is None:
        code = ErrorCode.no_reassignment_in_progress
    else:
        message = _replicas_refused([int(b) for b in partition.replicas], ctx.broker.node_id)
        if message is not None:
            code = ErrorCode.invalid_replica_assignment
    return {"partition_index": index, "error_code": code, "error_message": message}


def answer(request: Any, responses: list[dict[str, Any]], code: ErrorCode) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": bool(
            getattr(request, "allow_replication_factor_change", True)
        ),
        "error_code": code,
        "error_message": None,
        "responses": responses,
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    responses = [
        {"name": str(t.name), "partitions": [_answer(str(t.name), p, ctx) for p in t.partitions]}
        for t in request.topics
    ]
    return answer(request, responses, ErrorCode.none)
