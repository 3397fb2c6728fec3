"""Internal topics: topics that belong to the node's own services, shown to clients as Kafka
shows them, never written or managed by clients.

Kafka's group coordinator keeps its state in `__consumer_offsets`, a topic of
`offsets.topic.num.partitions` partitions whose leaders are the coordinators. Clients see it:
Metadata for all topics lists it with `is_internal` set (so that pattern subscriptions skip it
while `exclude.internal.topics` is true), a Metadata request naming it finds it even with
auto-creation off, and it is never auto-created as an ordinary topic. Producing to it is refused
with INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic", `ReplicaManager`), as is
DeleteRecords ("Cannot delete records of internal topic"); CreateTopics answers
TOPIC_ALREADY_EXISTS for it; DescribeConfigs shows the configs Kafka creates it with. Admin APIs
find it in `Broker.internal_topics`, not in the `TopicStore`.

Here the group coordinator registers the topic when it starts, with the partition count its
placement uses, so Metadata and coordinator placement can never disagree. DIFFERS from Kafka: the
coordinator's records live in SQLite (`groups.sqlite`), not in partition logs, so every
partition of the topic reads as empty (Fetch and ListOffsets answer as for a log with no
records, where Kafka would return the coordinator's binary records; a consumer whose pattern
takes the topic, as librdkafka's regexes do, then waits instead of failing), and it cannot be
deleted, grown or reconfigured (Kafka lets an admin client delete it and so lose every group's
offsets). Its
topic id is derived from the cluster id and the name, so it is the same after every restart,
as a real topic's id is.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from coordinator.partition_log.partition import OffsetOutOfRangeError

GROUP_METADATA_TOPIC = "__consumer_offsets"

_TOPIC_ID_NAMESPACE = uuid.UUID("5d3b2f0e-6a0b-4f4e-9a55-7c8e2b1f0c11")


class EmptyPartition:
    """A partition with no records, read as `PartitionLog` is read (offset 0 only)."""

    log_start_offset = 0
    high_watermark = 0

    def check_offset(self, offset: int) -> None:
        if offset != 0:
            raise OffsetOutOfRangeError(f"offset {offset} is outside [0, 0]")

    def read(self, offset: int, max_bytes: int) -> bytes:
        self.check_offset(offset)
        return b""

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        return None


_EMPTY = EmptyPartition()


@dataclass(frozen=True, slots=True)
class InternalTopic:
    name: str
    topic_id: uuid.UUID
    partition_count: int

    def partition(self, index: int) -> EmptyPartition | None:
        return _EMPTY if 0 <= index < self.partition_count else None


class InternalTopics:
    """The internal topics of a node, by name and by id."""

    def __init__(self) -> None:
        self._by_name: dict[str, InternalTopic] = {}

    def add(self, name: str, partitions: int, cluster_id: str) -> InternalTopic:
        if partitions < 1:
            raise ValueError(f"internal topic {name!r} needs at least one partition")
        topic_id = uuid.uuid5(_TOPIC_ID_NAMESPACE, f"{cluster_id}/{name}")
        topic = InternalTopic(name, topic_id, partitions)
        self._by_name[name] = topic
        return topic

    def get(self, name: str) -> InternalTopic | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> InternalTopic | None:
        return next((t for t in self._by_name.values() if t.topic_id == topic_id), None)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[InternalTopic]:
        return iter(sorted(self._by_name.values(), key=lambda t: t.name))
