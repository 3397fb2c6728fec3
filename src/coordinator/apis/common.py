"""Small helpers shared by the group API modules."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from coordinator.apis.contract import RequestContext
from coordinator.runtime import GroupRuntime
from rebalance.errors import ErrorCode


def runtime(ctx: RequestContext) -> GroupRuntime:
    return ctx.broker.group_runtime()


_MILLISECOND = timedelta(milliseconds=1)


def millis(value: timedelta | int) -> int:
    """kio gives timeouts as `timedelta`; the core works in integer milliseconds."""
    if isinstance(value, timedelta):
        return value // _MILLISECOND
    return int(value)


def name_for_version(name: str | None, nullable: bool) -> str | None:
    """Kafka's normalisation of nullable protocol names: "" <-> null by version."""
    if nullable:
        return name or None
    return name or ""


def topic_partition_errors(
    topics: Iterable[tuple[str, Iterable[tuple[int, ErrorCode]]]],
) -> list[dict[str, Any]]:
    """The `topics` of a response that answers each partition with an error code
    (OffsetCommit, OffsetDelete)."""
    return [
        {
            "name": topic,
            "partitions": [
                {"partition_index": p, "error_code": int(code)} for p, code in partitions
            ],
        }
        for topic, partitions in topics
    ]
