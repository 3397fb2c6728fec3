"""The target assignment of a group epoch, computed by a server assignor (`assignors`).

The assignors work on topic names; the consumer group keeps topic ids. Each member's current
target is passed as what it owns, so the sticky `uniform` assignor moves as little as it can.
"""

from __future__ import annotations

from collections import Counter

import assignors
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.group import ConsumerGroup, Partitions, TopicMetadata


def chosen_assignor(group: ConsumerGroup, config: CoordinatorConfig) -> str:
    """The assignor most members ask for (ties: configuration order), else the first
    configured one (Kafka's `group.consumer.assignors` default)."""
    configured = config.group_consumer_assignors
    votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    if not votes:
        return configured[0]
    best = max(votes.values())
    return next(name for name in configured if votes.get(name) == best)


def compute_target(
    group: ConsumerGroup, metadata: TopicMetadata, assignor: str
) -> dict[str, Partitions]:
    """member id -> target partitions by topic id, for every member."""
    by_id = metadata.by_id()
    subscriptions = {
        member_id: sorted(member.subscribed_topics(metadata))
        for member_id, member in group.members.items()
    }
    owned = {
        member_id: [
            (by_id[topic_id].name, p)
            for topic_id, partitions in group.target.get(member_id, {}).items()
            if topic_id in by_id
            for p in sorted(partitions)
            if p < by_id[topic_id].partitions
        ]
        for member_id in group.members
    }
    result = assignors.assign(
        assignor,
        subscriptions,
        {t.name: t.partitions for t in metadata.topics.values()},
        owned=owned,
        member_racks={m: group.members[m].rack_id for m in group.members},
        instance_ids={
            m: member.instance_id
            for m, member in group.members.items()
            if member.instance_id is not None
        },
    )
    target: dict[str, Partitions] = {}
    for member_id, pairs in result.items():
        partitions: Partitions = {}
        for topic, p in pairs:
            partitions.setdefault(metadata.topics[topic].topic_id, set()).add(p)
        target[member_id] = partitions
    return target
