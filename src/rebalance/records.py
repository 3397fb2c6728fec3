"""Kafka's `__consumer_offsets` records: the only durable state of the group coordinator.

Offset commits, shared by every group type; each group type declares its own record class in
its package (`GroupType.record_class`: `rebalance.classic.records`, ...). A value of None is a
tombstone. `replay` (`rebalance.state`) is the only way they change state,
live and when a partition loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rebalance.quick_init import quick_init


class Record(Protocol):
    """A record of any group type: it names its group, and its value (None: a tombstone) is
    what the type's replay applies (`OffsetCommitRecord`s are the core's)."""

    @property
    def group_id(self) -> str: ...

    @property
    def value(self) -> object | None: ...


@quick_init
@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset as stored (Kafka `OffsetAndMetadata`)."""

    offset: int
    leader_epoch: int  # -1 when absent
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    value: OffsetAndMetadata | None  # None: tombstone, the offset is deleted
