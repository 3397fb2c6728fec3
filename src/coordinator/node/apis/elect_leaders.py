"""ElectLeaders (key 43, KIP-183/KIP-460): elect the preferred (or an unclean) leader.

Versions: v0 preferred elections only; v1 election_type and a top-level error_code; v2
flexible. The Java admin client's `electLeaders` and `kafka-leader-election.sh` send it.

This node is the only replica of every partition and leads it already, so no election is ever
needed: each partition asked for answers ELECTION_NOT_NEEDED, as a single Kafka broker does;
an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; an election type other than 0
(preferred) or 1 (unclean) INVALID_REQUEST for the request and every partition. Asked for all
partitions (`topic_partitions` null), Kafka reports only the elections it ran: every topic with
no partition results. Without ALTER on the cluster (when an authorizer runs) every partition is
refused CLUSTER_AUTHORIZATION_FAILED (`coordinator.node.authorization`).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.metadata import partition_count
from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 43
VERSIONS = range(0, 3)

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."


def _result(topic: str, partition: int, ctx: RequestContext) -> dict[str, Any]:
    count = partition_count(topic, ctx)
    if count is None:
        code, message = ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}"
    elif not 0 <= partition < count:
        code, message = (
            ErrorCode.unknown_topic_or_partition,
            f"No such partition as {topic}-{partition}",
        )
    else:
        code, message = ErrorCode.election_not_needed, NOT_NEEDED
    return {"partition_id": partition, "error_code": code, "error_message": message}


def refused(request: Any, code: ErrorCode, message: str | None) -> dict[str, Any]:
    """Every partition asked for answered `code`, and the request too."""
    results = [
        {
            "topic": str(t.topic),
            "partition_result": [
                {"partition_id": int(p), "error_code": code, "error_message": message}
                for p in t.partitions
            ],
        }
        for t in request.topic_partitions or ()
    ]
    return {"throttle_time": 0, "error_code": code, "replica_election_results": results}


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    election_type = int(getattr(request, "election_type", PREFERRED))
    if election_type not in (PREFERRED, UNCLEAN):
        return refused(request, ErrorCode.invalid_request, f"Unknown election type {election_type}")
    if request.topic_partitions is None:
        names = [t.name for t in ctx.broker.internal_topics] + [t.name for t in ctx.broker.topics]
        results: list[dict[str, Any]] = [{"topic": name, "partition_result": []} for name in names]
    else:
        results = [
            {
                "topic": str(t.topic),
                "partition_result": [_result(str(t.topic), int(p), ctx) for p in t.partitions],
            }
            for t in request.topic_partitions
        ]
    return {"throttle_time": 0, "error_code": ErrorCode.none, "replica_election_results": results}
