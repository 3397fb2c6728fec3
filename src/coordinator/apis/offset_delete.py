"""OffsetDelete (key 47, v0 only): delete a group's offsets for topics it does not consume."""

from __future__ import annotations

from typing import Any

from coordinator.apis.common import runtime, topic_partition_errors
from coordinator.apis.contract import RequestContext, ResponseValue
from rebalance.commands import OffsetDelete

API_KEY = 47
VERSIONS = range(0, 1)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    command = OffsetDelete(
        request.group_id,
        tuple((t.name, tuple(p.partition_index for p in t.partitions)) for t in request.topics),
    )
    reply = await runtime(ctx).submit(command)
    return {
        "error_code": int(reply.error),
        "throttle_time": 0,
        "topics": topic_partition_errors(reply.topics),
    }
