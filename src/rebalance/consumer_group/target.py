"""The target assignment of a group epoch, computed by a server assignor (`assignors`).

The computation works on `TargetInputs`, a copy of what it reads from the group (each member's
subscription, the current targets, the topic metadata), so that it can run anywhere: inline on
the coordinator's loop for a small group, or in a worker thread for a large one while the loop
keeps answering heartbeats (`epochs.py` decides, the shell runs it). Its result, a
`ComputedTarget`, holds only what changed; `epochs.apply_target` writes it as records.

The assignors work on topic names; the consumer group keeps topic ids. Each member's current
target is passed as what it owns, so the sticky `uniform` assignor moves as little as it can.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import assignors
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.group import (
    ConsumerGroup,
    Partitions,
    TopicMetadata,
    freeze,
    subscribed_topics,
)
from rebalance.consumer_group.records import Assignment


def chosen_assignor(group: ConsumerGroup, config: CoordinatorConfig) -> str:
    """The assignor most members ask for (ties: configuration order), else the first
    configured one (Kafka's `group.consumer.assignors` default)."""
    configured = config.group_consumer_assignors
    votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    if not votes:
        return configured[0]
    best = max(votes.values())
    return next(name for name in configured if votes.get(name) == best)


@dataclass(frozen=True, slots=True)
class MemberInputs:
    member_id: str
    topic_names: tuple[str, ...]
    topic_regex: str | None
    rack_id: str | None
    instance_id: str | None


@dataclass(frozen=True, slots=True)
class TargetInputs:
    """What the target of `group_epoch` is computed from. Nothing here is mutated later: the
    tuples are copies, `targets` maps to dicts the group replaces (never edits) when a record
    changes a member's target, and the shell replaces `metadata` whole."""

    group_id: str
    group_epoch: int
    assignor: str
    metadata: TopicMetadata
    members: tuple[MemberInputs, ...]
    targets: Mapping[str, Partitions]

    @property
    def size(self) -> int:
        """Members plus the partitions of the topics they subscribe to: what the assignors'
        work grows with."""
        topics = self.metadata.topics
        subscribed: set[str] = set()
        for m in self.members:
            subscribed |= subscribed_topics(m.topic_names, m.topic_regex, self.metadata)
        return len(self.members) + sum(topics[t].partitions for t in subscribed)


@dataclass(frozen=True, slots=True)
class ComputedTarget:
    """A target assignment: the members whose target changed, and the whole target by topic
    name (the `target_assignment` event's `assignments`)."""

    changed: dict[str, Assignment]
    by_name: dict[str, list[list[Any]]]


def target_inputs(
    group: ConsumerGroup, metadata: TopicMetadata, config: CoordinatorConfig
) -> TargetInputs:
    """A copy of what the target of the group's current epoch depends on (cheap: no
    partition is copied)."""
    return TargetInputs(
        group.group_id,
        group.group_epoch,
        chosen_assignor(group, config),
        metadata,
        tuple(
            MemberInputs(
                m.member_id,
                m.subscribed_topic_names,
                m.subscribed_topic_regex,
                m.rack_id,
                m.instance_id,
            )
            for m in group.members.values()
        ),
        dict(group.target),
    )


def compute_target(inputs: TargetInputs) -> ComputedTarget:
    """Run the assignor over `inputs`. Pure: safe to call from a worker thread."""
    metadata = inputs.metadata
    by_id = metadata.by_id()
    subscriptions = {
        m.member_id: sorted(subscribed_topics(m.topic_names, m.topic_regex, metadata))
        for m in inputs.members
    }
    owned = {
        m.member_id: [
            (by_id[topic_id].name, p)
            for topic_id, partitions in inputs.targets.get(m.member_id, {}).items()
            if topic_id in by_id
            for p in sorted(partitions)
            if p < by_id[topic_id].partitions
        ]
        for m in inputs.members
    }
    result = assignors.assign(
        inputs.assignor,
        subscriptions,
        {t.name: t.partitions for t in metadata.topics.values()},
        owned=owned,
        member_racks={m.member_id: m.rack_id for m in inputs.members},
        instance_ids={m.member_id: m.instance_id for m in inputs.members if m.instance_id},
    )
    changed: dict[str, Assignment] = {}
    by_name: dict[str, list[list[Any]]] = {}
    for member_id in sorted(result):
        partitions: Partitions = {}
        for topic, p in result[member_id]:
            partitions.setdefault(metadata.topics[topic].topic_id, set()).add(p)
        if partitions != inputs.targets.get(member_id, {}):
            changed[member_id] = freeze(partitions)
        by_name[member_id] = [[by_id[t].name, sorted(ps)] for t, ps in sorted(partitions.items())]
    return ComputedTarget(changed, by_name)
