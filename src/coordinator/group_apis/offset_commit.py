"""OffsetCommit (key 8).

Advertised from v2 (kio's floor, Kafka 4.0's). v2-v4: RetentionTimeMs (explicit expiry);
v3: throttle time; v5: retention removed; v6: CommittedLeaderEpoch; v7: GroupInstanceId;
v8: flexible; v9: GROUP_ID_NOT_FOUND for a generation on an unknown group (KIP-848 era).
v10 (topic ids) is not advertised: no client here uses it. aiokafka uses v3, kafka-python v8,
librdkafka v9.
"""

from __future__ import annotations

from typing import Any

from coordinator.group_apis.common import millis, runtime
from coordinator.wire.handlers import RequestContext, ResponseValue
from rebalance.commands import CommitPartition, CommitTopic, OffsetCommit
from rebalance.replies import OffsetCommitReply

API_KEY = 8
VERSIONS = range(2, 10)


def to_command(request: Any, api_version: int) -> OffsetCommit:
    retention = getattr(request, "retention_time", None)
    return OffsetCommit(
        group_id=request.group_id,
        topics=tuple(
            CommitTopic(
                t.name,
                tuple(
                    CommitPartition(
                        partition=p.partition_index,
                        offset=p.committed_offset,
                        leader_epoch=getattr(p, "committed_leader_epoch", -1),
                        metadata=p.committed_metadata,
                    )
                    for p in t.partitions
                ),
            )
            for t in request.topics
        ),
        generation_id=request.generation_id_or_member_epoch,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        retention_time_ms=-1 if retention is None else millis(retention),
        version=api_version,
    )


def to_response(reply: OffsetCommitReply) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "error_code": int(code)} for p, code in partitions
                ],
            }
            for topic, partitions in reply.topics
        ],
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version))
    return to_response(reply)
