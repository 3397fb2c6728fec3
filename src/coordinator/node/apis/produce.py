"""Produce (key 0): append producers' record batches to the partition logs.

Versions: v3 is the floor (magic-2 batches, transactional_id); v5 log_start_offset; v8
record_errors/error_message; v9 flexible; v13 topics addressed by topic_id. No client needs
Produce to join a group, but librdkafka refuses to Fetch unless Produce v3+ is advertised
(its MSGVER2 feature), so it is always registered.

Each batch is validated (magic 2, length, CRC) before anything is written; a partition with any
invalid batch gets CORRUPT_MESSAGE and nothing of it is stored. The server assigns base
offsets; the response carries the first one once the data is fsynced. acks=0 gets no response.
Idempotent producers are supported (InitProducerId; a retried batch is answered with its
original offset instead of being stored twice); transactional producers are not.

A partition whose data cannot be stored (disk full, I/O error: any `OSError` from the write or
the fsync) is answered KAFKA_STORAGE_ERROR, as Kafka answers for an offline log dir, and nothing
of it is acknowledged or left visible (`coordinator.partition_log.partition`); the other
partitions of the request and the connection carry on, and the next produce is stored as soon
as the disk has room again. Kafka also takes the whole log dir offline until a restart; here the
log stays open, since the roll-back leaves it consistent (on purpose: recovery without restart).

Internal topics (`__consumer_offsets`) are refused with INVALID_TOPIC_EXCEPTION and Kafka's
message "Cannot append to internal topic ..." (Kafka lets its own admin client id,
`__admin_client`, append; here there is no log to append to, so nobody may).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.partition_log.batch import InvalidBatchError, iter_batches
from coordinator.partition_log.internal import InternalTopic
from coordinator.partition_log.partition import PartitionLog
from coordinator.partition_log.topics import Topic

API_KEY = 0
VERSIONS = range(3, 14)

VALID_ACKS = frozenset({-1, 0, 1})

logger = logging.getLogger("coordinator.partition_log")

#: Seconds between two warnings about failed writes (a full disk fails every produce).
_WARN_EVERY = 10.0
_last_warning = [-_WARN_EVERY]


def _storage_failed(log: PartitionLog, error: OSError) -> None:
    now = time.monotonic()
    if now - _last_warning[0] >= _WARN_EVERY:
        _last_warning[0] = now
        logger.warning("%s: write failed, answering KAFKA_STORAGE_ERROR: %s", log.path, error)


def _storage_error(result: dict[str, Any], error: OSError) -> None:
    result.update(
        error_code=ErrorCode.kafka_storage_error,
        base_offset=-1,
        log_start_offset=-1,
        error_message=f"not stored: {error.strerror or error}",
    )


def _partition_result(
    topic: Topic | None,
    index: int,
    records: bytes | None,
    acks: int,
    by_id: bool,
    internal: InternalTopic | None = None,
) -> tuple[dict[str, Any], PartitionLog | None]:
    def answer(
        code: ErrorCode, base_offset: int = -1, message: str | None = None, log_start: int = -1
    ) -> Any:
        return {
            "index": index,
            "error_code": code,
            "base_offset": base_offset,
            "log_append_time": None,
            "log_start_offset": log_start,
            "record_errors": [],
            "error_message": message,
        }

    if acks not in VALID_ACKS:
        return answer(ErrorCode.invalid_required_acks), None
    if internal is not None:
        if not 0 <= index < internal.partition_count:
            return answer(ErrorCode.unknown_topic_or_partition), None
        message = f"Cannot append to internal topic {internal.name}"
        return answer(ErrorCode.invalid_topic_exception, message=message), None
    log = topic.partition(index) if topic is not None else None
    if log is None:
        if topic is None and by_id:
            return answer(ErrorCode.unknown_topic_id), None
        return answer(ErrorCode.unknown_topic_or_partition), None
    try:
        batches = list(iter_batches(bytes(records or b"")))
    except InvalidBatchError as exc:
        return answer(ErrorCode.corrupt_message, message=str(exc)), None
    if not batches:
        return answer(ErrorCode.corrupt_message, message="no record batch in request"), None
    try:
        base_offset = log.append(batches)
    except OSError as exc:
        _storage_failed(log, exc)
        result = answer(ErrorCode.none)
        _storage_error(result, exc)
        return result, None
    return answer(ErrorCode.none, base_offset, log_start=log.log_start_offset), log


async def _make_durable(
    logs: dict[PartitionLog, int], ctx: RequestContext
) -> dict[PartitionLog, OSError]:
    """Fsync every log appended to; the logs whose data could not be made durable."""
    outcomes = await asyncio.gather(
        *(log.flush(generation) for log, generation in logs.items()), return_exceptions=True
    )
    failed: dict[PartitionLog, OSError] = {}
    for log, outcome in zip(logs, outcomes, strict=True):
        if isinstance(outcome, OSError):
            _storage_failed(log, outcome)
            failed[log] = outcome
        elif isinstance(outcome, BaseException):
            raise outcome
    if any(outcome is True for outcome in outcomes):
        ctx.broker.topics.notify_appended()
    return failed


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    topics = ctx.broker.topics
    touched: dict[PartitionLog, int] = {}  # each log, its generation after the appends
    appended: list[tuple[dict[str, Any], PartitionLog]] = []
    responses = []
    for topic_data in request.topic_data:
        if api_version >= 13:
            topic = topics.by_id(topic_data.topic_id)
            internal = ctx.broker.internal_topics.by_id(topic_data.topic_id)
        else:
            topic = topics.get(topic_data.name)
            internal = ctx.broker.internal_topics.get(topic_data.name)
        partitions = []
        for data in topic_data.partition_data:
            result, log = _partition_result(
                topic,
                data.index,
                data.records,
                request.acks,
                api_version >= 13,
                internal,
            )
            partitions.append(result)
            if log is not None:
                touched[log] = log.generation
                appended.append((result, log))
        responses.append(
            {
                "name": getattr(topic_data, "name", None),
                "topic_id": getattr(topic_data, "topic_id", None),
                "partition_responses": partitions,
            }
        )
    # Shielded: once batches are written, a client disconnect must not leave them un-fsynced
    # and invisible behind the high watermark.
    failed = await asyncio.shield(_make_durable(touched, ctx))
    for result, log in appended:
        if log in failed:
            _storage_error(result, failed[log])
    if request.acks == 0:
        return None
    return {"responses": responses, "throttle_time": 0}
