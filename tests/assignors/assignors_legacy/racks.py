"""Rack matching rules of KIP-881, shared by the rack-aware assignors.

A member with no rack (``None`` or the empty string, as Java treats ``client.rack=""``) matches
every partition. Rack-awareness is switched on only when it can make a difference: some member
has a rack, that rack hosts at least one replica, and at least one partition does *not* have a
replica on every rack (otherwise every member is equally close to every partition).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from assignors.spec import TopicDescriber


def member_rack(rack: str | None) -> str | None:
    """Normalise a member rack: the empty string means "no rack"."""
    return rack or None


def racks_match(rack: str | None, partition_racks: frozenset[str]) -> bool:
    """KIP-881's ``racksMatch``: true if the member has no rack or its rack hosts a replica."""
    return rack is None or rack in partition_racks


def use_rack_aware(
    member_racks: Iterable[str | None], partition_racks: Sequence[frozenset[str]]
) -> bool:
    """Kafka's ``useRackAwareAssignment`` gate over the given members and partitions."""
    consumer_racks = {r for r in member_racks if r}
    if not consumer_racks:
        return False
    all_racks: set[str] = set()
    for racks in partition_racks:
        all_racks.update(racks)
    if not consumer_racks & all_racks:
        return False
    return any(racks != all_racks for racks in partition_racks)


def topic_racks(topics: TopicDescriber, topic: str, count: int) -> list[frozenset[str]]:
    """Replica racks of every partition of ``topic``, indexed by partition number."""
    return [topics.replica_racks(topic, p) for p in range(count)]
