"""OffsetDelete (key 47, v0 only): delete a group's offsets for topics it does not consume.

As for OffsetCommit, partitions of a topic the node does not have (or past its partition count)
are answered UNKNOWN_TOPIC_OR_PARTITION without reaching the coordinator, as Kafka's broker does
(`KafkaApis.handleOffsetDeleteRequest`). The coordinator is asked even when none is left, so its
group errors (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP) still come back; a group error replaces the
per-partition answers, as Kafka's response builder merges them.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime, topic_partition_errors
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.commands import OffsetDelete
from rebalance.errors import ErrorCode

API_KEY = 47
VERSIONS = range(0, 1)

Partitions = tuple[tuple[str, tuple[int, ...]], ...]


def _known(requested: Partitions, ctx: RequestContext) -> Partitions:
    known = []
    for topic, partitions in requested:
        count = ctx.broker.partition_count(topic)
        kept = tuple(p for p in partitions if count is not None and 0 <= p < count)
        if kept:
            known.append((topic, kept))
    return tuple(known)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    requested: Partitions = tuple(
        (t.name, tuple(p.partition_index for p in t.partitions)) for t in request.topics
    )
    reply = await runtime(ctx).submit(OffsetDelete(request.group_id, _known(requested, ctx)))
    answered = {(t, p): code for t, parts in reply.topics for p, code in parts}
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    topics = (
        []
        if reply.error is not ErrorCode.NONE
        else topic_partition_errors(
            (topic, [(p, answered.get((topic, p), unknown)) for p in partitions])
            for topic, partitions in requested
        )
    )
    return {"error_code": int(reply.error), "throttle_time": 0, "topics": topics}
