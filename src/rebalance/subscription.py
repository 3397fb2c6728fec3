"""The "consumer" protocol type that group types share, and what its assignments and
subscriptions say in the event log.

The bytes are ConsumerProtocol Assignment messages; `assignors.consumer_protocol` reads every
version of them. The topics a group consumes (offset expiry, OffsetDelete, spec §3.3-§3.4)
are its type's `GroupType.subscribed_topics`.
"""

from __future__ import annotations

from assignors.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from assignors.spec import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"


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
    return _by_topic(decoded.partitions)


def owned_partitions(subscription: bytes) -> list[list[object]] | None:
    """`[[topic, [partitions...]], ...]`: what a member said it owned when it joined (the
    owned partitions of a ConsumerProtocol Subscription, v1 and later), for the event log.

    None when the subscription cannot say: version 0 (no such field) or bytes that are not a
    Subscription. An eager member revokes everything before it joins, so it owns nothing here.
    """
    try:
        decoded = decode_subscription(subscription)
    except ConsumerProtocolError:
        return None
    if decoded.version < 1:
        return None
    return _by_topic(decoded.owned_partitions)


def _by_topic(partitions: tuple[TopicPartition, ...]) -> list[list[object]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [[topic, numbers] for topic, numbers in by_topic.items()]
