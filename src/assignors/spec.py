"""Value types shared by every assignor: the group spec, the topic describer and the result.

An assignor is a pure function of two inputs. The *group spec* says who is in the group and what
each member already holds; the *topic describer* says how many partitions each topic has and on
which racks their replicas live. Keeping the current assignment inside the spec (rather than in
hidden assignor state) is what lets the sticky assignors stay stateless and deterministic.

Ordering rules (the same for every assignor, so results are reproducible):

* Member order: members with a static instance id come first, ordered by instance id; the others
  follow, ordered by member id (Kafka's ``MemberInfo`` order). Strings compare as Java does, by
  UTF-16 code units, so the order matches Java even for characters outside the BMP.
* Topic order: plain string order (Kafka topic names are ASCII, so this is Java's order too);
  partitions ascending.
* Output: every member of the spec is present; its list is sorted by (topic, partition).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

TopicPartition = tuple[str, int]
"""A partition as ``(topic, partition number)``."""

GroupAssignment = dict[str, list[TopicPartition]]
"""member id -> sorted list of partitions; every member of the spec is a key."""


class AssignmentError(ValueError):
    """The inputs cannot be assigned (for example a seed allocator's precondition fails)."""


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What one member brings to a rebalance.

    ``owned`` is the member's current assignment (owned partitions for cooperative members, the
    previous assignment carried in user data for eager sticky members, the target assignment for
    server-side assignors). ``generation`` is the generation in which ``owned`` was valid; ``None``
    means unknown, which loses every ownership conflict against a known generation.
    """

    topics: frozenset[str]
    owned: tuple[TopicPartition, ...] = ()
    generation: int | None = None
    rack: str | None = None
    instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The members of a group, keyed by member id."""

    members: Mapping[str, MemberSubscription]

    def ordered_member_ids(self) -> list[str]:
        """Member ids in member order (see the module docstring)."""
        members = self.members
        if not any(m.instance_id is not None for m in members.values()):
            ids = list(members)
            if "".join(ids).isascii():  # code point order is Java's order: no key to build
                return sorted(ids)
        return sorted(members, key=lambda m: member_order_key(m, members[m].instance_id))


@runtime_checkable
class TopicDescriber(Protocol):
    """Read-only view of the cluster metadata an assignor needs."""

    def partition_count(self, topic: str) -> int | None:
        """Number of partitions of ``topic``; ``None`` (or 0) if the topic is unknown."""
        ...

    def replica_racks(self, topic: str, partition: int) -> frozenset[str]:
        """Racks hosting a replica of the partition (empty if unknown)."""
        ...


@runtime_checkable
class BrokerDescriber(Protocol):
    """Optional extra view for allocators keyed by broker id (TubeMQ's partition keys)."""

    def broker_id(self, topic: str, partition: int) -> int | None:
        """Id of the broker hosting the partition, ``None`` if unknown."""
        ...


@dataclass(frozen=True, slots=True)
class StaticTopics:
    """A `TopicDescriber` backed by plain mappings (what scripts, tests and adapters build)."""

    partitions: Mapping[str, int]
    racks: Mapping[TopicPartition, Iterable[str]] = field(default_factory=dict)
    brokers: Mapping[TopicPartition, int] = field(default_factory=dict)

    def partition_count(self, topic: str) -> int | None:
        return self.partitions.get(topic)

    def replica_racks(self, topic: str, partition: int) -> frozenset[str]:
        return frozenset(self.racks.get((topic, partition), ()))

    def broker_id(self, topic: str, partition: int) -> int | None:
        return self.brokers.get((topic, partition))


class PartitionAssignor(Protocol):
    """The one interface: a name and a pure ``assign``."""

    @property
    def name(self) -> str: ...

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment: ...


def java_string_key(value: str) -> bytes:
    """Sort key ordering strings like Java's ``String.compareTo`` (UTF-16 code units)."""
    return value.encode("utf-16-be", "surrogatepass")


def member_order_key(member_id: str, instance_id: str | None) -> tuple[int, bytes, bytes]:
    """Kafka's member order: static members (by instance id) first, then by member id."""
    if instance_id is not None:
        return (0, java_string_key(instance_id), java_string_key(member_id))
    return (1, java_string_key(member_id), b"")


def subscribed_topics(spec: GroupSpec, topics: TopicDescriber) -> list[str]:
    """Union of subscribed topics that exist (partition count > 0), in topic order.

    Topics without metadata are skipped silently, as Kafka's client assignors do: a member may
    subscribe before the topic is created.
    """
    union: set[str] = set()
    # members mostly share one subscription set: merge each distinct set once
    for member_topics in {member.topics for member in spec.members.values()}:
        union.update(member_topics)
    return sorted(t for t in union if (topics.partition_count(t) or 0) > 0)


def empty_assignment(spec: GroupSpec) -> GroupAssignment:
    """An assignment with every member present and nothing assigned."""
    return {member_id: [] for member_id in spec.members}
