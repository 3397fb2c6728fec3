"""The classic group's durable state: one metadata snapshot per group (Kafka's
`GroupMetadataKey`/`GroupMetadataValue`), None its tombstone."""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.quick_init import quick_init


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
