"""The consumer group's durable state: Kafka's KIP-848 records, one key each.

Kafka writes a consumer group as a set of keyed records in `__consumer_offsets` (group epoch,
member subscription, target assignment member and epoch, current member assignment); a member
leaves by tombstoning its keys. So do we: each value names its key (`key()`: kind and member id,
"" for the group-level kinds), the store keeps the last value per key, and a `Tombstone` deletes
one key. A record whose value is None deletes the group (the core's convention for every group
type; it is the group-epoch key's tombstone). Replaying the records in order
(`ConsumerGroupType.replay`) rebuilds the same group.

Assignments are keyed by topic id (Kafka's `Uuid`, here its string form), as on the wire: a
topic deleted and recreated under the same name is another topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

#: topic id -> partitions, both sorted: the form every assignment takes in records and replies.
Assignment = tuple[tuple[str, tuple[int, ...]], ...]
#: (epoch, partitions) pairs, sorted by epoch: the member epoch at which each listed partition
#: was assigned to the member (`assignment_epochs`).
PartitionEpochs = tuple[tuple[int, Assignment], ...]


class RecordKind(StrEnum):
    GROUP_EPOCH = "epoch"
    MEMBER = "member"  # the member's subscription and identity
    TARGET_MEMBER = "target"  # the member's partitions in the target assignment
    TARGET_EPOCH = "target_epoch"
    CURRENT = "current"  # the member's current (reconciled) assignment and epochs


Key = tuple["RecordKind", str]


@dataclass(frozen=True, slots=True)
class GroupEpochValue:
    """The group epoch and the topic metadata it was computed for: (name, id, partitions) of
    each subscribed topic that exists (Kafka 3.x kept this in its partition-metadata record)."""

    epoch: int
    topics: tuple[tuple[str, str, int], ...]

    def key(self) -> Key:
        return (RecordKind.GROUP_EPOCH, "")


@dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """What a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside a
    consumer group adds to its subscription (Kafka's `ClassicMemberMetadata`): its session
    timeout and its JoinGroup protocols (name, ConsumerProtocol subscription bytes), in its
    order of preference. Kept so the group can be converted back to a classic group."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberValue:
    """A member's subscription and identity (Kafka `ConsumerGroupMemberMetadataValue`);
    `classic` is set for a member using the classic protocol (online migration)."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    classic: ClassicMetadata | None = None

    def key(self) -> Key:
        return (RecordKind.MEMBER, self.member_id)


@dataclass(frozen=True, slots=True)
class TargetMemberValue:
    member_id: str
    partitions: Assignment

    def key(self) -> Key:
        return (RecordKind.TARGET_MEMBER, self.member_id)


@dataclass(frozen=True, slots=True)
class TargetEpochValue:
    epoch: int

    def key(self) -> Key:
        return (RecordKind.TARGET_EPOCH, "")


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    """Where a member's reconciliation stands (Kafka's current member assignment value).

    `epochs` says at which epoch each partition it holds (assigned or pending revocation) was
    assigned to it, where that is not the default, `max(member_epoch, 0)`: Kafka 4.3's
    per-partition AssignmentEpochs (KIP-1251), which let a commit at an older member epoch
    through for a partition held since then. A record written before (no epochs) reads as
    Kafka reads its own older records: every partition at the default."""

    member_id: str
    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned: Assignment
    pending_revocation: Assignment
    epochs: PartitionEpochs = ()

    def key(self) -> Key:
        return (RecordKind.CURRENT, self.member_id)


@dataclass(frozen=True, slots=True)
class Tombstone:
    """Deletes one key: a member's three keys when it leaves, the target epoch with the group."""

    kind: RecordKind
    member_id: str

    def key(self) -> Key:
        return (self.kind, self.member_id)


ConsumerValue = (
    GroupEpochValue
    | MemberValue
    | TargetMemberValue
    | TargetEpochValue
    | CurrentAssignmentValue
    | Tombstone
)


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    group_id: str
    value: ConsumerValue | None  # None: the group is deleted (its epoch key's tombstone)

    def key(self) -> Key:
        return self.value.key() if self.value is not None else (RecordKind.GROUP_EPOCH, "")
