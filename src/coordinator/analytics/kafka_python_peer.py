"""kafka-python's assignors driven on the same inputs as ours: the peer of the sweep and the tests.

kafka-python is a development dependency, not part of the `analytics` extra, so importing this
module raises ImportError where it is missing; the sweep catches that per task and records why
the peer rows are absent. Members are described with the metadata each kafka-python assignor
builds for itself (`metadata(topics)` after `on_assignment`-like state), so the peer reads its
own user-data and owned-partition formats rather than ours.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

# kafka-python 3.0 loads its JSON schemas with importlib.resources.read_text, deprecated in 3.11;
# the suite runs with warnings as errors, so import it once here with that warning silenced.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.metadata import (
        ConsumerProtocolAssignment,
        ConsumerProtocolSubscription,
    )
    from kafka.structs import TopicPartition as KafkaTopicPartition

__all__ = [
    "ALGORITHMS",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "CooperativeStickyAssignor",
    "FakeCluster",
    "KafkaTopicPartition",
    "RangePartitionAssignor",
    "RoundRobinPartitionAssignor",
    "StickyPartitionAssignor",
    "assignor_for",
    "flatten",
    "members",
]

ALGORITHMS: dict[str, Any] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
"""Our assignor name -> the kafka-python class implementing the same algorithm."""


class FakeCluster:
    """The two ClusterMetadata methods kafka-python's assignors call."""

    def __init__(self, partitions: Mapping[str, int]) -> None:
        self._partitions = {t: n for t, n in partitions.items() if n > 0}

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self._partitions.get(topic)
        return None if n is None else set(range(n))


def assignor_for(algorithm: str) -> Any:
    """A fresh kafka-python assignor (sticky ones keep per-instance state, so never share one)."""
    return ALGORITHMS[algorithm]()


def _metadata(
    algorithm: str | None,
    topics: Sequence[str],
    owned: Sequence[tuple[str, int]] | None,
    generation: int,
) -> Any:
    """What a kafka-python member of `algorithm` sends in JoinGroup, as its leader decodes it."""
    if algorithm is None:
        return SimpleNamespace(topics=list(topics))
    member = assignor_for(algorithm)
    if owned is not None and algorithm in ("sticky", "cooperative-sticky"):
        member.member_assignment = [KafkaTopicPartition(t, p) for t, p in owned]
        member.generation = generation
    return member.metadata(list(topics))


def members(
    subscriptions: Mapping[str, Sequence[str]],
    instance_ids: Mapping[str, str] | None = None,
    *,
    algorithm: str | None = None,
    owned: Mapping[str, Sequence[tuple[str, int]]] | None = None,
    generation: int = -1,
) -> list[Any]:
    """JoinGroup members for kafka-python's `assign(cluster, members)`.

    Without `algorithm` the metadata carries topics only (all range and roundrobin read); with it,
    each member's metadata is what that assignor's own `metadata()` builds, including the
    previous assignment (sticky user data, cooperative owned partitions) from `owned`.
    """
    instance_ids = instance_ids or {}
    owned = owned or {}
    return [
        SimpleNamespace(
            member_id=m,
            group_instance_id=instance_ids.get(m),
            metadata=_metadata(algorithm, topics, owned.get(m), generation),
        )
        for m, topics in subscriptions.items()
    ]


def flatten(result: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    """kafka-python's {member: ConsumerProtocolAssignment} as our member -> sorted partitions."""
    return {
        m: sorted((t, p) for t, ps in a.assigned_partitions for p in ps) for m, a in result.items()
    }
