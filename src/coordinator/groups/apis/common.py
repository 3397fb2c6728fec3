"""Small helpers shared by the group API modules."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any, cast

from coordinator.groups.runtime import GroupRuntime
from coordinator.node.contract import Broker, RequestContext
from rebalance.errors import ErrorCode


def group_runtime(broker: Broker) -> GroupRuntime:
    """The group runtime; only the group APIs ask, and only its extension registers them."""
    if broker.groups is None:
        raise LookupError("the group coordinator is not running on this broker")
    return cast(GroupRuntime, broker.groups)


def runtime(ctx: RequestContext) -> GroupRuntime:
    return group_runtime(ctx.broker)


_MILLISECOND = timedelta(milliseconds=1)


#: Timeouts already converted, each kept once: every member of a group sends the same few
#: (session and rebalance timeouts), and each member keeps both, so a thousand members hold two
#: int objects instead of two thousand. Bounded: past `_SHARED_MAX` values, no more are added.
_SHARED: dict[int, int] = {}
_SHARED_MAX = 1024


#: The same, by the `timedelta` kio decoded: found by hash, without dividing it (a JoinGroup
#: has two, and `//` of two timedeltas costs several times a dict lookup).
_SHARED_DELTAS: dict[timedelta, int] = {}


def millis(value: timedelta | int) -> int:
    """kio gives timeouts as `timedelta`; the core works in integer milliseconds."""
    if value.__class__ is timedelta:
        known = _SHARED_DELTAS.get(value)
        if known is not None:
            return known
    ms = value // _MILLISECOND if isinstance(value, timedelta) else int(value)
    shared = _SHARED.get(ms)
    if shared is None:
        if len(_SHARED) >= _SHARED_MAX:
            return ms
        _SHARED[ms] = shared = ms
    if isinstance(value, timedelta) and len(_SHARED_DELTAS) < _SHARED_MAX:
        _SHARED_DELTAS[value] = shared
    return shared


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
