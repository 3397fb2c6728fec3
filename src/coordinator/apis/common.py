"""Small helpers shared by the group API modules."""

from __future__ import annotations

from datetime import timedelta

from coordinator.apis.contract import RequestContext
from coordinator.runtime import GroupRuntime


def runtime(ctx: RequestContext) -> GroupRuntime:
    return ctx.broker.group_runtime()


def millis(value: timedelta | int) -> int:
    """kio gives timeouts as `timedelta`; the core works in integer milliseconds."""
    if isinstance(value, timedelta):
        return value // timedelta(milliseconds=1)
    return int(value)


def name_for_version(name: str | None, nullable: bool) -> str | None:
    """Kafka's normalisation of nullable protocol names: "" <-> null by version."""
    if nullable:
        return name or None
    return name or ""
