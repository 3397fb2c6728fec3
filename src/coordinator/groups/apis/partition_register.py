"""PartitionRegister (extension key 10001, v0): a client-balance node registers partitions,
each with an optional bootstrap offset (TubeMQ's broker register; `connect2Partition`). Each
partition is answered on its own: NONE with the offset consumption starts from, or
PARTITION_OCCUPIED (410) with the live holder, NOT_FOUND (404) for a partition outside the
node's topics or the cluster; a request from no current node incarnation gets HB_NO_NODE (411)
for all of them. A bootstrap offset is clamped to the partition's log range, which this node
reads from its log as TubeMQ's broker does."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire import client_balance_schema as schema
from rebalance.client_balance.commands import PartitionRequest, RegisterPartitions
from rebalance.client_balance.replies import RegisterPartitionsReply

API_KEY = schema.REGISTER_KEY
VERSIONS = range(0, 1)
SCHEMAS = schema.SCHEMAS[API_KEY]


def to_command(request: Any, ctx: RequestContext) -> RegisterPartitions:
    partitions = []
    for t in request.topics:
        topic = ctx.broker.topics.get(t.name)
        for p in t.partitions:
            index, offset = int(p.partition_index), int(p.bootstrap_offset)
            log = topic.partition(index) if topic is not None and offset >= 0 else None
            span = (log.log_start_offset, log.high_watermark) if log is not None else None
            partitions.append(PartitionRequest(t.name, index, offset, span))
    return RegisterPartitions(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=int(request.member_epoch),
        partitions=tuple(partitions),
    )


def to_response(reply: RegisterPartitionsReply) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for p in reply.partitions:
        by_topic.setdefault(p.topic, []).append(
            {
                "partition_index": p.partition,
                "error_code": int(p.error),
                "offset": p.offset,
                "holder": p.holder,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": int(reply.error),
        "error_message": reply.error_message,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, ctx))
    return to_response(reply)
