"""The assignor tests' name for the kafka-python peer, which lives in the src package (the sweep
drives it too): `coordinator.analytics.kafka_python_peer`."""

from __future__ import annotations

from coordinator.analytics.kafka_python_peer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    FakeCluster,
    KafkaTopicPartition,
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
    StickyPartitionAssignor,
    flatten,
    members,
)

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
