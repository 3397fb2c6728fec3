"""Kafka's `__consumer_offsets` records: the only durable state of the group coordinator.

Offset commits, shared by every group type, and the classic group's metadata snapshots; each
other group type declares its own record class in its package (`GroupType.record_class`). A
value of None is a tombstone. `replay` (`rebalance.state`) is the only way they change state,
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


@quick_init  # built for every member of a group each time its record is written (every round)
@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    """A member as persisted: only the selected protocol's metadata is kept (as in Kafka)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str | None
    generation: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadataValue, ...]


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    group_id: str
    value: GroupMetadataValue | None  # None: tombstone, the group is deleted


@quick_init
@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    value: OffsetAndMetadata | None  # None: tombstone, the offset is deleted
