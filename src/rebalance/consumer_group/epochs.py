"""Group epoch, target assignment and each member's reconciliation step.

The three layers of KIP-848 (`group.py`) move here: the group epoch bumps when the membership, a
subscription or the subscribed topics' metadata changed; the target assignment follows the group
epoch (`target.py`); a member advances towards its target one step per heartbeat
(`reconcile.py`), its revocation timer running while it has partitions to give back.
"""

from __future__ import annotations

from rebalance.consumer_group.group import (
    GROUP_TYPE,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    TopicMetadata,
    count,
    freeze,
)
from rebalance.consumer_group.reconcile import next_assignment
from rebalance.consumer_group.records import GroupEpochValue, TargetEpochValue, TargetMemberValue
from rebalance.consumer_group.replay import write
from rebalance.consumer_group.target import chosen_assignor, compute_target
from rebalance.effects import Result
from rebalance.event_schema import ConsumerTrigger, EventType
from rebalance.state import CoordinatorState
from rebalance.timers import consumer_revocation_key


def subscribed_metadata(
    group: ConsumerGroup, metadata: TopicMetadata
) -> tuple[tuple[str, str, int], ...]:
    """(name, id, partitions) of every existing topic some member subscribes to."""
    topics = metadata.topics
    return tuple(
        (name, topics[name].topic_id, topics[name].partitions)
        for name in sorted(group.subscribed_topic_names(metadata))
    )


def maybe_bump(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    group: ConsumerGroup,
    trigger: ConsumerTrigger | None,
    now_ms: int,
    *,
    check_metadata: bool = True,
) -> None:
    """Bump the group epoch if `trigger` says so or the subscribed topics' metadata moved,
    then bring the target assignment up to the group epoch."""
    subscribed = (
        subscribed_metadata(group, metadata) if check_metadata or trigger is not None else None
    )
    if trigger is None and subscribed is not None and subscribed != group.subscribed_metadata:
        trigger = ConsumerTrigger.METADATA_CHANGED
    if trigger is not None and subscribed is not None:
        write(state, result, group.group_id, GroupEpochValue(group.group_epoch + 1, subscribed))
        result.event(
            EventType.GROUP_EPOCH_BUMPED,
            now_ms,
            group.group_id,
            group.group_epoch,
            group_type=GROUP_TYPE,
            trigger=trigger,
            members=len(group.members),
        )
    if group.target_epoch != group.group_epoch and assignment_due(state, group, now_ms):
        assign(state, metadata, result, group, now_ms)


def assignment_due(state: CoordinatorState, group: ConsumerGroup, now_ms: int) -> bool:
    """Kafka 4.3's assignment batching (`group.consumer.assignment.interval.ms`): a new target
    only once the interval has passed since the last one was computed. Until then members
    reconcile towards the last target, and the epoch bumps in between (a thousand joins while a
    group forms) cost one computation, not one each: forming a group is no longer quadratic."""
    last = group.assigned_at_ms
    interval = state.config.group_consumer_assignment_interval_ms
    return last is None or now_ms - last >= interval


def assign(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    group: ConsumerGroup,
    now_ms: int,
) -> None:
    """Compute the target assignment of the group epoch and record what changed in it."""
    assignor = chosen_assignor(group, state.config)
    target = compute_target(group, metadata, assignor)
    for member_id in sorted(target):
        if target[member_id] != group.target.get(member_id, {}):
            write(
                state,
                result,
                group.group_id,
                TargetMemberValue(member_id, freeze(target[member_id])),
            )
    write(state, result, group.group_id, TargetEpochValue(group.group_epoch))
    group.assigned_at_ms = now_ms
    by_id = metadata.by_id()
    result.event(
        EventType.TARGET_ASSIGNMENT,
        now_ms,
        group.group_id,
        group.target_epoch,
        group_type=GROUP_TYPE,
        assignor=assignor,
        assignments={
            member_id: [
                [by_id[t].name if t in by_id else t, sorted(ps)]
                for t, ps in sorted(partitions.items())
            ]
            for member_id, partitions in sorted(target.items())
        },
    )


def reconcile(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    member: ConsumerMember,
    owned: Partitions | None,
    now_ms: int,
) -> None:
    """One reconciliation step for `member`; its revocation timer runs while it revokes."""
    value = next_assignment(
        member,
        group.target.get(member.member_id, {}),
        group.target_epoch,
        group.owner_of,
        owned,
    )
    if value == member.current_value():
        return
    write(state, result, group.group_id, value)
    key = consumer_revocation_key(group.group_id, member.member_id)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        state.schedule(result, key, now_ms + member.rebalance_timeout_ms)
    else:
        state.cancel(result, key)
    result.event(
        EventType.MEMBER_RECONCILED,
        now_ms,
        group.group_id,
        member.member_epoch,
        member.member_id,
        group_type=GROUP_TYPE,
        member_state=str(member.state),
        assigned=count(member.assigned),
        revoking=count(member.pending_revocation),
        target_epoch=group.target_epoch,
    )
