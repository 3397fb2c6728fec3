"""Which topics a "consumer" group is subscribed to, read from its members' metadata.

Offset expiry and OffsetDelete must not touch topics the group consumes (spec §3.3, §3.4). The
metadata is a ConsumerProtocol Subscription; every version (v0-v3) starts with an int16 version
and the topic list (int32 count, then int16-length UTF-8 names), which is all we need here.
"""

from __future__ import annotations

import struct

from rebalance.group import Group

CONSUMER_PROTOCOL_TYPE = "consumer"


class MalformedSubscription(ValueError):
    """The member metadata is not a ConsumerProtocol Subscription."""


def subscribed_topics(metadata: bytes) -> set[str]:
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        if count < 0:
            raise MalformedSubscription(f"negative topic count {count}")
        offset = 6
        topics: set[str] = set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, offset)
            offset += 2
            if length < 0 or offset + length > len(metadata):
                raise MalformedSubscription(f"bad topic name length {length}")
            topics.add(metadata[offset : offset + length].decode("utf-8"))
            offset += length
        return topics
    except (struct.error, UnicodeDecodeError) as exc:
        raise MalformedSubscription(str(exc)) from exc


def group_subscriptions(group: Group) -> set[str] | None:
    """Topics any member of a non-empty consumer group subscribes to.

    None means "unknown": a non-consumer protocol, or metadata that cannot be parsed (which
    Kafka treats as subscribed to every topic).
    """
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for member in group.members.values():
            topics |= subscribed_topics(member.metadata_for(group.protocol_name))
    except (MalformedSubscription, KeyError):
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
        (count,) = struct.unpack_from(">i", assignment, 2)
        offset = 6
        topics: list[list[object]] = []
        for _ in range(max(count, 0)):
            (length,) = struct.unpack_from(">h", assignment, offset)
            offset += 2
            if length < 0 or offset + length > len(assignment):
                return None
            topic = assignment[offset : offset + length].decode("utf-8")
            offset += length
            (n,) = struct.unpack_from(">i", assignment, offset)
            offset += 4
            if n < 0 or offset + 4 * n > len(assignment):
                return None
            partitions = list(struct.unpack_from(f">{n}i", assignment, offset))
            offset += 4 * n
            topics.append([topic, partitions])
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
