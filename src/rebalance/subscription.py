"""What a "consumer" group's member metadata and assignments say, for offset expiry,
OffsetDelete (topics the group consumes, spec §3.3-§3.4) and the event log (assignments).

The bytes are ConsumerProtocol Subscription / Assignment messages; `assignors.consumer_protocol`
reads every version of them.
"""

from __future__ import annotations

from assignors.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from rebalance.classic.group import Group
from rebalance.consumer_group.group import ConsumerGroup

CONSUMER_PROTOCOL_TYPE = "consumer"


def group_subscriptions(group: Group | ConsumerGroup) -> set[str] | None:
    """Topics any member of a non-empty consumer group subscribes to.

    None means "unknown": a non-consumer protocol, or metadata that cannot be parsed (which
    Kafka treats as subscribed to every topic).
    """
    if isinstance(group, ConsumerGroup):
        # The topics its group epoch was computed for: names and regex matches that exist.
        return {name for name, _, _ in group.subscribed_metadata}
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for member in group.members.values():
            topics.update(decode_subscription(member.metadata_for(group.protocol_name)).topics)
    except (ConsumerProtocolError, KeyError):
        return None
    return topics


def assigned_partitions(assignment: bytes) -> list[list[object]] | None:
    """`[[topic, [partitions...]], ...]` from a ConsumerProtocol Assignment, for the event log.

    Empty bytes are an empty assignment (what the coordinator stores for members the leader
    left out). None when the bytes are not a ConsumerProtocol Assignment.
    """
    if not assignment:
        return []
    try:
        decoded = decode_assignment(assignment)
    except ConsumerProtocolError:
        return None
    by_topic: dict[str, list[int]] = {}
    for topic, partition in decoded.partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [[topic, partitions] for topic, partitions in by_topic.items()]
