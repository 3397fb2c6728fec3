"""PartitionRelease (extension key 10002, v0): a client-balance node releases partitions
(TubeMQ's broker unregister; `disconnectFromPartition`). Releasing a partition nobody holds
answers NONE (a retry whose first answer was lost); one another node holds, PARTITION_OCCUPIED."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire import client_balance_schema as schema
from rebalance.client_balance.commands import PartitionRequest, ReleasePartitions
from rebalance.client_balance.replies import ReleasePartitionsReply

API_KEY = schema.RELEASE_KEY
VERSIONS = range(0, 1)
SCHEMAS = schema.SCHEMAS[API_KEY]


def to_command(request: Any) -> ReleasePartitions:
    return ReleasePartitions(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=int(request.member_epoch),
        partitions=tuple(
            PartitionRequest(t.name, int(p)) for t in request.topics for p in t.partitions
        ),
    )


def to_response(reply: ReleasePartitionsReply) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for p in reply.partitions:
        by_topic.setdefault(p.topic, []).append(
            {"partition_index": p.partition, "error_code": int(p.error)}
        )
    return {
        "throttle_time_ms": 0,
        "error_code": int(reply.error),
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request))
    return to_response(reply)
