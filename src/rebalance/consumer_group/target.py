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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import assignors
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.group import (
    ConsumerGroup,
    ConsumerMember,
    MemberInputs,
    subscribed_topics,
)
from rebalance.consumer_group.pair_forms import PairForms
from rebalance.consumer_group.records import Assignment
from rebalance.topics import TopicMetadata


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
class TargetInputs:
    """What the target of `group_epoch` is computed from. Nothing here is mutated later: the
    tuples are copies, `targets` maps to dicts the group replaces (never edits) when a record
    changes a member's target, and the shell replaces `metadata` whole."""

    group_id: str
    group_epoch: int
    assignor: str
    metadata: TopicMetadata
    members: tuple[MemberInputs, ...]
    #: Each member's current target, as its record holds it (sorted tuples, never edited).
    targets: Mapping[str, Assignment]


@dataclass(frozen=True, slots=True)
class ComputedTarget:
    """A target assignment: the members whose target changed, and the whole target by topic
    name (the `target_assignment` event's `assignments`)."""

    changed: dict[str, Assignment]
    #: (a list per member here; tuples from the worker process, which keeps them)
    by_name: dict[str, Sequence[tuple[str, tuple[int, ...]]]]


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
        tuple(map(_member_inputs, group.members.values())),
        dict(group.target.frozen),
    )


def _member_inputs(member: ConsumerMember) -> MemberInputs:
    """The member's inputs, made once per subscription (`ConsumerMember.target_inputs`)."""
    inputs = member.target_inputs
    if inputs is None:
        inputs = member.target_inputs = MemberInputs(
            member.member_id,
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
            member.rack_id,
            member.instance_id,
        )
    return inputs


class Assign(Protocol):
    """How `compute_target` runs the assignor: `assignors.assign`, or a caller's function giving
    the same result (the shell's worker process keeps the previous epoch's outcome and runs
    `UniformAssignor.assign_incremental`)."""

    def __call__(
        self,
        name: str,
        subscriptions: Mapping[str, list[str]],
        partitions: Mapping[str, int],
        *,
        owned: Mapping[str, list[assignors.TopicPartition]],
        member_racks: Mapping[str, str | None],
        instance_ids: Mapping[str, str],
    ) -> assignors.GroupAssignment: ...


def reads_owned(assignor: str) -> bool:
    """Whether the assignor's result depends on what members own (`reads_owned`, default
    True); an unknown name is left for the assignor's run to refuse."""
    try:
        return bool(getattr(assignors.get(assignor), "reads_owned", True))
    except assignors.UnknownAssignorError:
        return True


def compute_target(
    inputs: TargetInputs, run: Assign = assignors.assign, *, named: bool = True
) -> ComputedTarget:
    """Run the assignor over `inputs`. Pure: safe to call from a worker thread or process.
    ``named=False`` leaves `ComputedTarget.by_name` empty (a worker process whose caller builds
    it from the targets it already holds).

    Written for 10,000 members over a million partitions, where per-partition Python work is
    what costs (the assignor itself takes a fraction; `pair_forms` does the conversions in
    C-level passes): members with equal subscriptions share one list; owned partitions are the
    assignor's shared pair tuples in its own (topic name, partition) order, so a member the
    assignor left alone is recognised by one list comparison and keeps its record's form."""
    metadata = inputs.metadata
    forms = PairForms(metadata)
    shared: dict[tuple[tuple[str, ...], str | None], list[str]] = {}
    subscriptions: dict[str, list[str]] = {}
    for m in inputs.members:
        key = (m.topic_names, m.topic_regex)
        topics = shared.get(key)
        if topics is None:
            topics = shared[key] = sorted(subscribed_topics(*key, metadata))
        subscriptions[m.member_id] = topics
    owned: dict[str, list[assignors.TopicPartition]] = {}
    intact: set[str] = set()  # members whose whole target still exists
    if reads_owned(inputs.assignor):
        for m in inputs.members:
            owned[m.member_id], complete = forms.owned(inputs.targets.get(m.member_id, ()))
            if complete:
                intact.add(m.member_id)
    # else (`range`): nothing is handed over, so every member's result is converted and compared
    # with its target: range moves nearly every member's ranges when one joins or leaves, and
    # the million owned pairs cost more than the conversions they would spare.
    result = run(
        inputs.assignor,
        subscriptions,
        {t.name: t.partitions for t in metadata.topics.values()},
        owned=owned,
        member_racks={m.member_id: m.rack_id for m in inputs.members},
        instance_ids={m.member_id: m.instance_id for m in inputs.members if m.instance_id},
    )
    changed: dict[str, Assignment] = {}
    by_name: dict[str, Sequence[tuple[str, tuple[int, ...]]]] = {}
    for member_id in sorted(result):
        pairs = result[member_id]
        if member_id not in intact or pairs != owned[member_id]:
            if named:
                assignment, by_name[member_id] = forms.converted(pairs)
            else:
                assignment = forms.assignment(pairs)
            if assignment != inputs.targets.get(member_id, ()):
                changed[member_id] = assignment
        elif named:
            by_name[member_id] = forms.named(inputs.targets.get(member_id, ()))
    return ComputedTarget(changed, by_name)
