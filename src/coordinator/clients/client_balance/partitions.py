"""What a client-balance node holds of each registered partition, and what it hands out: TubeMQ's
partition keys, batches (`ConsumeResult`) and offsets (`OffsetInfo`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OffsetInfo:
    """TubeMQ's `ConsumeOffsetInfo`: the next offset to consume, the log end, when it moved."""

    current_offset: int
    max_offset: int
    update_time_ms: int


@dataclass(frozen=True)
class Message:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


@dataclass(frozen=True)
class ConsumeResult:
    """TubeMQ's `ConsumeResult`: one batch of one partition, to be confirmed."""

    topic: str
    partition_key: str
    confirm_context: str
    messages: tuple[Message, ...]
    current_offset: int
    max_offset: int


@dataclass
class PartitionState:
    """One registered partition: where consuming and fetching stand, the records fetched and
    not handed out, the batch handed out and not confirmed."""

    broker_id: int
    topic: str
    partition: int
    position: int  # the next offset to consume (what a confirm commits)
    fetch_position: int  # the next offset to fetch (ahead of position by the buffer)
    max_offset: int = -1
    update_time_ms: int = 0
    buffer: list[Message] = field(default_factory=list)
    booked: str | None = None  # the confirm context of the batch handed out
    booked_end: int = -1


def partition_key(broker_id: int, topic: str, partition: int) -> str:
    """TubeMQ's `PartitionKey`: `brokerId:topic:partitionId`."""
    return f"{broker_id}:{topic}:{partition}"


def parse_key(key: str) -> tuple[int, str, int]:
    broker, topic, partition = key.split(":")
    return int(broker), topic, int(partition)
