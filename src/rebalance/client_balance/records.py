"""The client-balance group's durable state: one keyed record per fact.

* the group's epoch (`GroupEpochValue`): bumped on every join, so each incarnation of a node has
  an epoch of its own (the fence of its partitions' commits); with it the group's source count
  and topics, fixed by the first node of an empty group until the group empties again;
* each node (`NodeValue`): its member id and epoch, source count, node id, topics, session;
* each held partition (`HolderValue`): which node incarnation registered it.

As for consumer groups, each value names its key (`key()`), the store keeps the last value per
key, a `Tombstone` deletes one key and a record whose value is None deletes the group (the epoch
key's tombstone). Replaying the records in order (`ClientBalanceGroupType.replay`) rebuilds the
same group: nodes, their epochs and every partition's holder.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RecordKind(StrEnum):
    GROUP_EPOCH = "epoch"
    NODE = "node"  # key: the member id
    HOLDER = "holder"  # key: "<partition>:<topic>" (the topic may contain ':', the number not)


Key = tuple[RecordKind, str]


def holder_key(topic: str, partition: int) -> str:
    return f"{partition}:{topic}"


def parse_holder_key(key: str) -> tuple[str, int]:
    partition, _, topic = key.partition(":")
    return topic, int(partition)


@dataclass(frozen=True, slots=True)
class GroupEpochValue:
    epoch: int
    #: The group's sourceCount and topics (TubeMQ's `ConsumeGroupInfo`, set by `addConsumer`
    #: into an empty group); None: a record written before they were kept (the first node's).
    source_count: int | None = None
    topics: tuple[str, ...] = ()

    def key(self) -> Key:
        return (RecordKind.GROUP_EPOCH, "")


@dataclass(frozen=True, slots=True)
class NodeValue:
    """A node as TubeMQ's master registers it (`ConsumerInfo` of a client-balance consumer)."""

    member_id: str
    member_epoch: int
    source_count: int
    node_id: int
    topics: tuple[str, ...]
    client_id: str
    client_host: str
    session_timeout_ms: int

    def key(self) -> Key:
        return (RecordKind.NODE, self.member_id)


@dataclass(frozen=True, slots=True)
class HolderValue:
    """Partition `topic`-`partition` is registered by the node `member_id` at `member_epoch`."""

    topic: str
    partition: int
    member_id: str
    member_epoch: int

    def key(self) -> Key:
        return (RecordKind.HOLDER, holder_key(self.topic, self.partition))


@dataclass(frozen=True, slots=True)
class Tombstone:
    """Deletes one key: a node that left or expired, a partition released."""

    kind: RecordKind
    name: str

    def key(self) -> Key:
        return (self.kind, self.name)


ClientBalanceValue = GroupEpochValue | NodeValue | HolderValue | Tombstone


@dataclass(frozen=True, slots=True)
class ClientBalanceRecord:
    group_id: str
    value: ClientBalanceValue | None  # None: the group is deleted (its epoch key's tombstone)

    def key(self) -> Key:
        return self.value.key() if self.value is not None else (RecordKind.GROUP_EPOCH, "")
