"""Consumer group and member data (Kafka's `ConsumerGroup` / `ConsumerGroupMember`).

The group holds three layers, each with its epoch, as KIP-848 does:

* the *group epoch* and each member's subscription: what the group wants (bumped whenever the
  membership, a subscription or the metadata of a subscribed topic changes);
* the *target assignment* and its epoch: what the server assignor computed for that group epoch;
* each member's *current assignment* and *member epoch*: how far that member has reconciled
  towards the target (`reconcile.py`). A member epoch never exceeds the target epoch.

`partition_epochs` maps every (topic id, partition) some member holds (assigned or still being
revoked) to that member: a partition listed there is not free, so nobody else may be given it.
That map is the "never two owners" rule made into data.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from rebalance.consumer_group.records import (
    Assignment,
    ClassicMetadata,
    CurrentAssignmentValue,
    MemberValue,
    PartitionEpochs,
)
from rebalance.lifecycle import GroupState, LoadedOnlyLifecycle
from rebalance.records import OffsetAndMetadata
from rebalance.topics import TopicMetadata

#: The group type's name, in events and ListGroups.
GROUP_TYPE = "consumer"

#: topic id -> set of partitions: the working form of an assignment.
Partitions = dict[str, set[int]]


class MemberState(StrEnum):
    """Kafka's `MemberState` (the names ConsumerGroupDescribe shows)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    UNKNOWN = "unknown"


def freeze(partitions: Partitions) -> Assignment:
    """The sorted tuple form (records, replies) of an assignment; empty topics dropped."""
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(partitions.items()) if ps)


def thaw(assignment: Assignment) -> Partitions:
    return {t: set(ps) for t, ps in assignment}


class Targets(Mapping[str, Partitions]):
    """Each member's target assignment: kept as its record holds it (`frozen`: sorted tuples,
    what the next target computation compares with and hands the assignor), and as sets when
    first asked for (a member's reconciliation). A target of 10,000 members over a million
    partitions writes a million (topic, partitions) entries; turning them all into sets at once
    cost about a second of allocations, most of it in the garbage collector, and a member needs
    its own only at its next heartbeat."""

    __slots__ = ("_thawed", "frozen")

    def __init__(self) -> None:
        self.frozen: dict[str, Assignment] = {}
        self._thawed: dict[str, Partitions] = {}

    def put(self, member_id: str, assignment: Assignment) -> None:
        self.frozen[member_id] = assignment
        self._thawed.pop(member_id, None)

    def discard(self, member_id: str) -> None:
        self.frozen.pop(member_id, None)
        self._thawed.pop(member_id, None)

    def __getitem__(self, member_id: str) -> Partitions:
        partitions = self._thawed.get(member_id)
        if partitions is None:
            partitions = self._thawed[member_id] = thaw(self.frozen[member_id])
        return partitions

    def __iter__(self) -> Iterator[str]:
        return iter(self.frozen)

    def __len__(self) -> int:
        return len(self.frozen)


def count(partitions: Partitions) -> int:
    return sum(len(ps) for ps in partitions.values())


class MemberInputs(NamedTuple):
    """A member's part of the target's inputs (`rebalance.consumer_group.target`). A named tuple,
    kept by the member until its subscription changes: the worker process's deltas compare 10,000
    of them in one C-level pass, where a dataclass's Python-level `__eq__` is an order of
    magnitude slower (RESULTS.md: figures behind the code)."""

    member_id: str
    topic_names: tuple[str, ...]
    topic_regex: str | None
    rack_id: str | None
    instance_id: str | None


@dataclass(slots=True, eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: Set for a member using the classic protocol (it joined by JoinGroup, or was a member of
    #: a classic group upgraded online); None for a KIP-848 member.
    classic: ClassicMetadata | None = None
    # -- reconciliation -----------------------------------------------------------------
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    #: The epoch each held partition was assigned at, where not the default, as recorded
    #: (`assignment_epochs`).
    epochs: PartitionEpochs = ()
    #: The assignment last sent to the client: the next reply carries it only if it changed.
    sent: Assignment | None = None
    #: This member's part of a target computation's inputs, kept until its subscription
    #: changes: a big group hands 10,000 of them over at every epoch (`target.target_inputs`).
    target_inputs: MemberInputs | None = field(default=None, repr=False)

    def subscription_value(self) -> MemberValue:
        return MemberValue(
            self.member_id,
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.server_assignor,
            self.classic,
        )

    def apply_subscription(self, value: MemberValue) -> None:
        self.target_inputs = None
        self.instance_id = value.instance_id
        self.rack_id = value.rack_id
        self.client_id = value.client_id
        self.client_host = value.client_host
        self.rebalance_timeout_ms = value.rebalance_timeout_ms
        self.subscribed_topic_names = value.subscribed_topic_names
        self.subscribed_topic_regex = value.subscribed_topic_regex
        self.server_assignor = value.server_assignor
        self.classic = value.classic

    def current_value(self) -> CurrentAssignmentValue:
        return CurrentAssignmentValue(
            self.member_id,
            self.member_epoch,
            self.previous_member_epoch,
            str(self.state),
            freeze(self.assigned),
            freeze(self.pending_revocation),
            self.epochs,
        )

    def subscribed_topics(self, metadata: TopicMetadata) -> set[str]:
        return subscribed_topics(self.subscribed_topic_names, self.subscribed_topic_regex, metadata)


def subscribed_topics(
    names: tuple[str, ...], regex: str | None, metadata: TopicMetadata
) -> set[str]:
    """Names and regex matches, of topics that exist. DIFFERS: Kafka evaluates the regex with
    RE2/J; Python's `re` (full match, as Java's `matches`) agrees on the RE2 syntax clients use
    in practice, but also accepts what RE2 refuses (backreferences, lookaround), and RE2's
    `\\C` or `\\pN` classes are not Python's."""
    topics = {t for t in names if t in metadata.topics}
    if regex:
        pattern = re.compile(regex)
        topics.update(t for t in metadata.topics if pattern.fullmatch(t))
    return topics


#: A new group's group and assignment epochs: its first bump makes 2. Kafka 4.4's ModernGroup
#: starts both at 1 (groupEpoch, TargetAssignmentMetadata.INITIAL); before, at 0.
NEW_GROUP_EPOCH = 1


class ConsumerGroup(LoadedOnlyLifecycle):
    """A KIP-848 consumer group. `state` is the lifecycle's (loading, live); `kafka_state` is
    what ListGroups shows (Empty, Assigning, Reconciling, Stable)."""

    group_type = GROUP_TYPE
    protocol_type = "consumer"

    __slots__ = (
        "assigned_at_ms",
        "computing",
        "group_epoch",
        "group_id",
        "members",
        "metadata_refresh",
        "offsets",
        "partition",
        "partition_owners",
        "static_members",
        "subscribed_metadata",
        "subscribers",
        "target",
        "target_epoch",
    )

    def __init__(self, group_id: str, partition: int) -> None:
        self.group_id = group_id
        self.partition = partition
        self.state = GroupState.DOWN
        self.group_epoch = NEW_GROUP_EPOCH
        #: (name, id, partitions) of the subscribed topics the group epoch was computed for.
        self.subscribed_metadata: tuple[tuple[str, str, int], ...] = ()
        #: How many members name each topic, or use each regex: the group's subscribed topics
        #: without a walk over every member (each join asks for them: a walk made forming a
        #: group quadratic).
        self.subscribers: Counter[str | re.Pattern[str]] = Counter()
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target = Targets()  # member id -> target partitions
        self.target_epoch = NEW_GROUP_EPOCH
        #: (topic id, partition) -> the member holding it (assigned or being revoked).
        self.partition_owners: dict[tuple[str, int], str] = {}
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        self.current_state_timestamp_ms: int | None = None
        #: When the last target assignment was computed (None: not since this core loaded the
        #: group). Not recorded: it only paces the next computation (assignment batching).
        self.assigned_at_ms: int | None = None
        #: The `TargetInputs` a worker is computing a target from (None: none in flight); a
        #: result is this group's only if it answers that very request.
        self.computing: object | None = None
        #: Whether the next heartbeat must check the subscribed topics' metadata (Kafka's
        #: `ModernGroup.hasMetadataExpired`): set on creation and load, and when a topic change
        #: touches the group (`requestMetadataRefresh`); not recorded.
        self.metadata_refresh = True

    # -- views -----------------------------------------------------------------------------
    @property
    def empty(self) -> bool:
        return not self.members

    @property
    def kafka_state(self) -> str:
        """Kafka's `ConsumerGroupState`: Empty, Assigning (target behind the group epoch),
        Reconciling (a member behind the target or not stable), Stable."""
        if self.state is GroupState.DOWN:
            return "Dead"
        if not self.members:
            return "Empty"
        if self.target_epoch != self.group_epoch:
            return "Assigning"
        for member in self.members.values():
            if member.member_epoch != self.target_epoch or member.state is not MemberState.STABLE:
                return "Reconciling"
        return "Stable"

    def subscribed_topic_names(self, metadata: TopicMetadata) -> set[str]:
        topics: set[str] = set()
        for key in self.subscribers:
            if isinstance(key, str):
                if key in metadata.topics:
                    topics.add(key)
            else:
                topics.update(t for t in metadata.topics if key.fullmatch(t))
        return topics

    def count_subscription(self, member: ConsumerMember, sign: int) -> None:
        """Add (1) or remove (-1) `member`'s subscription in `subscribers`."""
        keys: list[str | re.Pattern[str]] = list(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            keys.append(re.compile(member.subscribed_topic_regex))
        for key in keys:
            self.subscribers[key] += sign
            if self.subscribers[key] <= 0:
                del self.subscribers[key]

    # -- bookkeeping kept consistent with the members -------------------------------------
    def set_current(self, member: ConsumerMember, value: CurrentAssignmentValue) -> None:
        """Replace `member`'s current assignment, moving its entries in `partition_owners`."""
        self.release_all(member)
        member.member_epoch = value.member_epoch
        member.previous_member_epoch = value.previous_member_epoch
        member.state = MemberState(value.state)
        member.assigned = thaw(value.assigned)
        member.pending_revocation = thaw(value.pending_revocation)
        member.epochs = value.epochs
        for held in (member.assigned, member.pending_revocation):
            for topic_id, partitions in held.items():
                for p in partitions:
                    owner = self.partition_owners.setdefault((topic_id, p), member.member_id)
                    if owner != member.member_id:
                        raise ValueError(
                            f"partition {topic_id}-{p} given to {member.member_id} while "
                            f"{owner} holds it"
                        )

    def release_all(self, member: ConsumerMember) -> None:
        for held in (member.assigned, member.pending_revocation):
            for topic_id, partitions in held.items():
                for p in partitions:
                    if self.partition_owners.get((topic_id, p)) == member.member_id:
                        del self.partition_owners[(topic_id, p)]

    def owner_of(self, topic_id: str, partition: int) -> str | None:
        return self.partition_owners.get((topic_id, partition))

    def remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self.count_subscription(member, -1)
        self.release_all(member)
        self.target.discard(member_id)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == (
            member_id
        ):
            del self.static_members[member.instance_id]
