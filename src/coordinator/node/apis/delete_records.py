"""DeleteRecords (key 21): move partitions' log start offset forward.

Versions: v0-v1 the same fields; v2 flexible. aiokafka, kafka-python and librdkafka send v0-v2.

The new log start offset is durable before the answer (see `coordinator.partition_log.partition`);
from then on Fetch below it answers OFFSET_OUT_OF_RANGE (so a consumer's `auto.offset.reset`
applies), ListOffsets' earliest is it, and Fetch, Produce and ListOffsets report it as
log_start_offset. As in Kafka: offset -1 means the high watermark; an offset above the high
watermark, or another negative one, is OFFSET_OUT_OF_RANGE; an offset at or below the current
start changes nothing and answers the current start as low_watermark; an unknown partition is
UNKNOWN_TOPIC_OR_PARTITION with low_watermark -1. The partitions of the internal
`__consumer_offsets` are INVALID_TOPIC_EXCEPTION ("Cannot delete records of internal topic"),
as Kafka's `ReplicaManager` answers.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.partition_log.partition import OffsetOutOfRangeError, PartitionLog

API_KEY = 21

logger = logging.getLogger("coordinator.partition_log")
VERSIONS = range(0, 3)

HIGH_WATERMARK = -1


def _delete_before(log: PartitionLog | None, offset: int) -> tuple[ErrorCode, int]:
    if log is None:
        return ErrorCode.unknown_topic_or_partition, -1
    if offset == HIGH_WATERMARK:
        offset = log.high_watermark
    if offset < 0:
        return ErrorCode.offset_out_of_range, -1
    try:
        # On the event loop, like topic creation: moves of one partition's start never race,
        # and the fsync of a few bytes is short.
        return ErrorCode.none, log.advance_log_start(offset)
    except OffsetOutOfRangeError:
        return ErrorCode.offset_out_of_range, -1
    except OSError as exc:  # the new start could not be stored: it did not move
        logger.warning("%s: log start not moved: %s", log.path, exc)
        return ErrorCode.kafka_storage_error, -1


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    answers = []
    for requested in request.topics:
        topic = ctx.broker.topics.get(str(requested.name))
        internal = ctx.broker.internal_topics.get(str(requested.name))
        partitions = []
        for partition in requested.partitions:
            index = int(partition.partition_index)
            log = topic.partition(index) if topic is not None else None
            if internal is not None and 0 <= index < internal.partition_count:
                code, low_watermark = ErrorCode.invalid_topic_exception, -1
            else:
                code, low_watermark = _delete_before(log, int(partition.offset))
            partitions.append(
                {"partition_index": index, "low_watermark": low_watermark, "error_code": code}
            )
        answers.append({"name": str(requested.name), "partitions": partitions})
    return {"throttle_time": 0, "topics": answers}
