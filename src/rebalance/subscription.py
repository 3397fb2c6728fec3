"""The "consumer" protocol type that group types share, and what its assignments say in the
event log.

The bytes are ConsumerProtocol Assignment messages; `assignors.consumer_protocol` reads every
version of them. The topics a group consumes (offset expiry, OffsetDelete, spec §3.3-§3.4)
are its type's `GroupType.subscribed_topics`.
"""

from __future__ import annotations

from assignors.consumer_protocol import ConsumerProtocolError, decode_assignment

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
    by_topic: dict[str, list[int]] = {}
    for topic, partition in decoded.partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [[topic, partitions] for topic, partitions in by_topic.items()]
