"""ListOffsets (key 2): earliest (-2), latest (-1) and timestamp lookups per partition.

Versions: v1 is kio's floor (single offset per partition, timestamp in the answer); v2
isolation_level and throttle_time; v4 leader epochs; v6 flexible; v7 max-timestamp spec (-3);
v8 tiered-storage spec (-4); v9 earliest-pending-upload (-5); v10 timeout. aiokafka sends v3,
librdkafka v7 (one request per partition, read_committed), kafka-python v11.

With no transactions, "latest" is the high watermark for both isolation levels. A timestamp
lookup answers the base offset of the first batch with a record at or after the timestamp, with
that batch's max timestamp (batch granularity), or -1 if there is none. The special specs -3
and below are not supported and answer UNSUPPORTED_VERSION for that partition.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.partition_log.internal import EmptyPartition, InternalTopic
from coordinator.partition_log.partition import PartitionLog
from coordinator.partition_log.topics import Topic

API_KEY = 2
VERSIONS = range(1, 12)

LATEST = -1
EARLIEST = -2
LEADER_EPOCH = 0


def _lookup(log: PartitionLog | EmptyPartition, timestamp: int) -> dict[str, Any]:
    if timestamp == LATEST:
        return {"error_code": ErrorCode.none, "timestamp": -1, "offset": log.high_watermark}
    if timestamp == EARLIEST:
        return {"error_code": ErrorCode.none, "timestamp": -1, "offset": log.log_start_offset}
    if timestamp < 0:
        return {"error_code": ErrorCode.unsupported_version, "timestamp": -1, "offset": -1}
    found = log.offset_for_timestamp(timestamp)
    if found is None:
        return {"error_code": ErrorCode.none, "timestamp": -1, "offset": -1}
    offset, batch_max_timestamp = found
    return {"error_code": ErrorCode.none, "timestamp": batch_max_timestamp, "offset": offset}


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    topics = ctx.broker.topics
    answer = []
    for requested in request.topics:
        topic: Topic | InternalTopic | None = topics.get(requested.name)
        if topic is None:
            topic = ctx.broker.internal_topics.get(requested.name)  # reads as empty
        partitions = []
        for partition in requested.partitions:
            log = topic.partition(partition.partition_index) if topic is not None else None
            if log is None:
                found = {
                    "error_code": ErrorCode.unknown_topic_or_partition,
                    "timestamp": -1,
                    "offset": -1,
                }
            else:
                found = _lookup(log, partition.timestamp)
            partitions.append(
                {
                    "partition_index": partition.partition_index,
                    "leader_epoch": LEADER_EPOCH,
                    **found,
                }
            )
        answer.append({"name": requested.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": answer}
