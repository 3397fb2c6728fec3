"""Kafka consumer-group partition assignors: pure functions from a group spec to an assignment.

Built-ins: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, ``uniform`` (KIP-848),
``zookeeper-range`` and ``zookeeper-roundrobin`` (Kafka 0.8) and ``tubemq-modulo`` (TubeMQ client
balance). Range, sticky and cooperative-sticky are rack-aware (KIP-881) when member and replica
racks are given.

`assign` is the stable entry point for scripts and tests; `get`/`register` reach the registry;
`assignors.aiokafka.assignor(name)` wraps an assignor for ``AIOKafkaConsumer``. Nothing here
performs I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .recall import recalled_pairs
from .registry import UnknownAssignorError, get, names, register
from .spec import (
    AssignmentError,
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
    PartitionAssignor,
    StaticTopics,
    TopicDescriber,
    TopicPartition,
)

__all__ = [
    "AssignmentError",
    "GroupAssignment",
    "GroupSpec",
    "MemberSubscription",
    "PartitionAssignor",
    "StaticTopics",
    "TopicDescriber",
    "TopicPartition",
    "UnknownAssignorError",
    "assign",
    "get",
    "group_spec",
    "names",
    "register",
]


def group_spec(
    subscriptions: Mapping[str, Iterable[str]],
    *,
    owned: Mapping[str, Iterable[TopicPartition]] | None = None,
    generations: Mapping[str, int] | None = None,
    member_racks: Mapping[str, str | None] | None = None,
    instance_ids: Mapping[str, str] | None = None,
) -> GroupSpec:
    """Build a `GroupSpec` from plain mappings keyed by member id."""
    owned = owned or {}
    generations = generations or {}
    member_racks = member_racks or {}
    instance_ids = instance_ids or {}
    topic_sets: dict[int, frozenset[str]] = {}

    def topic_set(topics: Iterable[str]) -> frozenset[str]:
        # members usually share one subscription list: build its set once, not per member;
        # the mapping keeps the lists alive meanwhile
        if not isinstance(topics, list | tuple):
            return frozenset(topics)
        cached = topic_sets.get(id(topics))
        if cached is None:
            cached = topic_sets[id(topics)] = frozenset(topics)
        return cached

    def owned_pairs(member: str) -> tuple[TopicPartition, ...]:
        pairs = owned.get(member, ())
        if isinstance(pairs, list | tuple) and pairs:
            # the uniform assignor's own result handed back: its tuples, compared in C
            remembered = recalled_pairs(member, pairs)
            if remembered is not None:
                return remembered
        # tuple(pair) is the pair itself when it is a tuple already (no copy)
        return tuple(map(tuple, pairs))  # type: ignore[arg-type]

    return GroupSpec(
        {
            member: MemberSubscription(
                topics=topic_set(topics),
                owned=owned_pairs(member),
                generation=generations.get(member),
                rack=member_racks.get(member),
                instance_id=instance_ids.get(member),
            )
            for member, topics in subscriptions.items()
        }
    )


def assign(
    name: str,
    subscriptions: Mapping[str, Iterable[str]],
    partitions: Mapping[str, int],
    *,
    owned: Mapping[str, Iterable[TopicPartition]] | None = None,
    generations: Mapping[str, int] | None = None,
    member_racks: Mapping[str, str | None] | None = None,
    partition_racks: Mapping[TopicPartition, Iterable[str]] | None = None,
    instance_ids: Mapping[str, str] | None = None,
    partition_brokers: Mapping[TopicPartition, int] | None = None,
) -> GroupAssignment:
    """Run the assignor ``name``; returns member id -> sorted (topic, partition) list.

    Every member of ``subscriptions`` is present in the result (possibly with an empty list).
    ``instance_ids`` (static membership) and ``partition_brokers`` (for ``tubemq-modulo``) are
    optional extras beyond the Kafka inputs.
    """
    assignor = get(name)
    if not getattr(assignor, "reads_owned", True):
        owned = None  # not sticky (range): a million owned pairs would be read for nothing
    spec = group_spec(
        subscriptions,
        owned=owned,
        generations=generations,
        member_racks=member_racks,
        instance_ids=instance_ids,
    )
    topics = StaticTopics(
        dict(partitions), dict(partition_racks or {}), dict(partition_brokers or {})
    )
    result = assignor.assign(spec, topics)
    if getattr(assignor, "sorted_output", False):
        # a built-in that already returns fresh, sorted lists: sorting 1M pairs again is waste
        return {member: result.get(member) or [] for member in spec.members}
    return {member: sorted(result.get(member, [])) for member in spec.members}
