"""Drive kafka-python's assignors (test-only peer) on the same inputs as ours."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

# kafka-python 3.0 loads its JSON schemas with importlib.resources.read_text, deprecated in 3.11;
# the suite runs with warnings as errors, so import it once here with that warning silenced.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.metadata import (
        ConsumerProtocolAssignment,
        ConsumerProtocolSubscription,
    )
    from kafka.structs import TopicPartition as KafkaTopicPartition

__all__ = [
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "FakeCluster",
    "KafkaTopicPartition",
    "RangePartitionAssignor",
    "RoundRobinPartitionAssignor",
    "StickyPartitionAssignor",
    "flatten",
    "members",
]


class FakeCluster:
    """The two ClusterMetadata methods kafka-python's assignors call."""

    def __init__(self, partitions: Mapping[str, int]) -> None:
        self._partitions = {t: n for t, n in partitions.items() if n > 0}

    def topics(self) -> set[str]:
        return set(self._partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self._partitions.get(topic)
        return None if n is None else set(range(n))


def members(
    subscriptions: Mapping[str, Sequence[str]], instance_ids: Mapping[str, str] | None = None
) -> list[Any]:
    instance_ids = instance_ids or {}
    return [
        SimpleNamespace(
            member_id=m,
            group_instance_id=instance_ids.get(m),
            metadata=SimpleNamespace(topics=list(topics)),
        )
        for m, topics in subscriptions.items()
    ]


def flatten(result: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    return {
        m: sorted((t, p) for t, ps in a.assigned_partitions for p in ps) for m, a in result.items()
    }
