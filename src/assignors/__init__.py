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
    return GroupSpec(
        {
            member: MemberSubscription(
                topics=frozenset(topics),
                owned=tuple((t, p) for t, p in owned.get(member, ())),
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
    result = get(name).assign(spec, topics)
    return {member: sorted(result.get(member, [])) for member in spec.members}
