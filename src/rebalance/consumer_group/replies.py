"""The consumer group's responses (ConsumerGroupHeartbeat, ConsumerGroupDescribe)."""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatReply:
    """KIP-848's heartbeat answer. `assignment` (topic id, partitions) is None when unchanged
    since the last reply and the request was not a full one (the wire sends null then)."""

    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None


#: (topic id, topic name, partitions): ConsumerGroupDescribe shows both the id and the name.
NamedAssignment = tuple[tuple[str, str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: NamedAssignment
    target_assignment: NamedAssignment
    #: The member speaks the classic protocol (online migration), not ConsumerGroupHeartbeat.
    classic: bool = False


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    group_id: str
    error: ErrorCode
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeReply:
    groups: tuple[DescribedConsumerGroup, ...]
