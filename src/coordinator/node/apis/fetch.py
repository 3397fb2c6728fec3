"""Fetch (key 1): whole record batches from a requested offset, with long-polling.

Versions: v4 is kio's floor (isolation_level, last_stable_offset, aborted_transactions); v5
log_start_offset; v7 fetch sessions (session_id/epoch, forgotten topics); v11 rack_id and
preferred_read_replica; v12 flexible; v13 topics addressed by topic_id (the response echoes
it); v15 replica_state; v17/v18 only add fields we leave at their defaults. aiokafka sends
v11, kafka-python v12, librdkafka v16.

Size limits: the first partition with data always returns at least one whole batch (so a
consumer can make progress past a batch larger than its limits); after `max_bytes` is used up,
further partitions report their offsets without records.

Long poll: if fewer than `min_bytes` are available the request waits for new data until
`max_wait`, and is then answered even if empty (otherwise clients spin). There are no
transactions, so last_stable_offset = high watermark (librdkafka reads with read_committed and
would stop at a lower LSO). No fetch sessions are created: session_id 0 is answered to
sessionless (epoch -1) and new-session (epoch 0) requests alike, which every client accepts; an
incremental request for a session id answers FETCH_SESSION_ID_NOT_FOUND. The internal
`__consumer_offsets` reads as empty (see `coordinator.partition_log.internal`).
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.partition_log.internal import InternalTopic
from coordinator.partition_log.partition import OffsetOutOfRangeError
from coordinator.partition_log.topics import Topic

API_KEY = 1
VERSIONS = range(4, 19)


def _partition_data(
    topic: Topic | InternalTopic | None, request: Any, budget: int
) -> tuple[dict[str, Any], int]:
    """One partition's answer; with no `budget` left, only its offsets (no records)."""
    index = request.partition
    log = topic.partition(index) if topic is not None else None
    if log is None:
        return _answer(index, ErrorCode.unknown_topic_or_partition, -1, b""), 0
    try:
        if budget > 0:
            records = log.read(request.fetch_offset, min(request.partition_max_bytes, budget))
        else:
            log.check_offset(request.fetch_offset)
            records = b""
        code = ErrorCode.none
    except OffsetOutOfRangeError:
        records, code = b"", ErrorCode.offset_out_of_range
    answer = _answer(index, code, log.high_watermark, records, log.log_start_offset)
    return answer, len(records)


def _answer(
    index: int, code: ErrorCode, high_watermark: int, records: bytes, log_start: int = -1
) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": high_watermark,
        "last_stable_offset": high_watermark,
        "log_start_offset": log_start,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": records,
    }


def _collect(request: Any, api_version: int, ctx: RequestContext) -> tuple[list[Any], int]:
    topics, internal = ctx.broker.topics, ctx.broker.internal_topics
    budget = max(int(request.max_bytes), 1)
    total = 0
    responses = []
    for fetch_topic in request.topics:
        by_id = api_version >= 13
        topic: Topic | InternalTopic | None
        if by_id:
            topic = topics.by_id(fetch_topic.topic_id) or internal.by_id(fetch_topic.topic_id)
        else:
            topic = topics.get(fetch_topic.topic) or internal.get(fetch_topic.topic)
        partitions = []
        for partition in fetch_topic.partitions:
            if topic is None and by_id:
                data = _answer(partition.partition, ErrorCode.unknown_topic_id, -1, b"")
                size = 0
            else:
                data, size = _partition_data(topic, partition, budget - total)
            partitions.append(data)
            total += size
        responses.append(
            {
                "topic": getattr(fetch_topic, "topic", None),
                "topic_id": getattr(fetch_topic, "topic_id", None),
                "partitions": partitions,
            }
        )
    return responses, total


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    if api_version >= 7 and request.session_id != 0:
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.fetch_session_id_not_found,
            "session_id": 0,
            "responses": [],
        }
    deadline = time.monotonic() + request.max_wait.total_seconds()
    min_bytes = max(int(request.min_bytes), 0)
    while True:
        responses, total = _collect(request, api_version, ctx)
        remaining = deadline - time.monotonic()
        if total >= min_bytes or remaining <= 0 or ctx.broker.closing:
            break
        await ctx.broker.topics.wait_for_append(remaining)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "session_id": 0,
        "responses": responses,
    }
