"""Group epoch, target assignment and each member's reconciliation step.

The three layers of KIP-848 (`group.py`) move here: the group epoch bumps when the membership, a
subscription or the subscribed topics' metadata changed; the target assignment follows the group
epoch (`target.py`); a member advances towards its target one step per heartbeat
(`reconcile.py`), its revocation timer running while it has partitions to give back.
"""

from __future__ import annotations

from rebalance.consumer_group.group import (
    GROUP_TYPE,
    NEW_GROUP_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    count,
)
from rebalance.consumer_group.reconcile import next_assignment
from rebalance.consumer_group.records import GroupEpochValue, TargetEpochValue, TargetMemberValue
from rebalance.consumer_group.replay import write
from rebalance.consumer_group.target import (
    ComputedTarget,
    TargetInputs,
    compute_target,
    target_inputs,
)
from rebalance.consumer_group.timers import consumer_revocation_key
from rebalance.effects import Result
from rebalance.event_schema import ConsumerTrigger, EventType
from rebalance.state import CoordinatorState
from rebalance.topics import TopicMetadata


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
    retarget: bool = True,
) -> None:
    """Bump the group epoch if `trigger` says so or the subscribed topics' metadata moved,
    then bring the target assignment up to the group epoch (unless `retarget` is false: a
    departure only bumps the epoch, see `departure.fence`, and catches the target epoch up
    if it emptied the group)."""
    subscribed = (
        subscribed_metadata(group, metadata) if check_metadata or trigger is not None else None
    )
    if subscribed is not None:
        group.metadata_refresh = False  # refreshed (Kafka's `setMetadataRefreshDeadline`)
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
    if not retarget and not group.members and group.target_epoch != group.group_epoch:
        # Kafka 4.3 (KAFKA-20442): a departure that empties the group writes the assignment
        # epoch with the group epoch, so an empty group's epochs match (ConsumerGroupDescribe).
        write(state, result, group.group_id, TargetEpochValue(group.group_epoch))
    if (
        retarget
        and group.target_epoch != group.group_epoch
        and group.computing is None  # one computation at a time; `target_computed` follows
        and assignment_due(state, group, now_ms)
    ):
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
    """Compute the target assignment of the group epoch: here, or (a large group, with
    `group.consumer.assignor.offload.enable`) in the shell's worker, which hands the result
    back through `target_computed` while heartbeats go on being answered."""
    inputs = target_inputs(group, metadata, state.config)
    if offloads(state, metadata, group):
        group.computing = inputs
        result.offload(inputs)
        return
    apply_target(state, result, group, inputs, compute_target(inputs), now_ms)


def offloads(state: CoordinatorState, metadata: TopicMetadata, group: ConsumerGroup) -> bool:
    """Whether the group's next target is computed off the loop (`assign`)."""
    # A group's first target is computed here, whatever its size: until a target exists its
    # members are at epoch 0, which a client can only send back as a new join.
    first = group.target_epoch <= NEW_GROUP_EPOCH
    if first or not state.config.group_consumer_assignor_offload_enable:
        return False
    # What the assignors' work grows with: members plus the partitions they subscribe to.
    size = len(group.members) + sum(t[2] for t in subscribed_metadata(group, metadata))
    return size >= OFFLOAD_FROM


#: The smallest size (members plus subscribed partitions) computed off the loop: below it (a
#: few tens of thousands of partitions) the assignors take a few milliseconds, less than the
#: hand-off costs.
OFFLOAD_FROM = 50_000


def target_computed(
    state: CoordinatorState,
    metadata: TopicMetadata,
    group: ConsumerGroup,
    inputs: TargetInputs,
    computed: ComputedTarget | None,
    now_ms: int,
) -> Result:
    """A worker's target for `inputs.group_epoch` (None: the assignor failed). Applied only
    if that epoch is still the group's: a membership, subscription or metadata change since
    bumped the epoch, so the result answers a question nobody asks any more, and a new
    computation starts from the current group at once. (Kafka 4.3's offloaded assignments
    cancel a stale computation the same way.)"""
    result = Result()
    if group.computing is not inputs:
        return result  # not this group's request: it was reloaded or re-created meanwhile
    group.computing = None
    if computed is not None and group.group_epoch == inputs.group_epoch:
        apply_target(state, result, group, inputs, computed, now_ms)
    else:
        maybe_bump(state, metadata, result, group, None, now_ms, check_metadata=False)
    return result


def apply_target(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    inputs: TargetInputs,
    computed: ComputedTarget,
    now_ms: int,
) -> None:
    """Record the target of `inputs.group_epoch`: each changed member's, then the epoch. A
    static member replaced meanwhile (which keeps the epoch) gets its instance's target under
    its new member id, as if the replacement came after the computation."""
    instance_of: dict[str, str | None] | None = None  # made only if needed: 10,000 members
    for member_id, partitions in computed.changed.items():
        if member_id not in group.members:
            if instance_of is None:
                instance_of = {m.member_id: m.instance_id for m in inputs.members}
            member_id = group.static_members.get(instance_of.get(member_id) or "", "")
            if member_id not in group.members:
                continue
        write(state, result, group.group_id, TargetMemberValue(member_id, partitions))
    write(state, result, group.group_id, TargetEpochValue(inputs.group_epoch))
    group.assigned_at_ms = now_ms
    result.event(
        EventType.TARGET_ASSIGNMENT,
        now_ms,
        group.group_id,
        group.target_epoch,
        group_type=GROUP_TYPE,
        assignor=inputs.assignor,
        assignments=computed.by_name,
    )


def reconcile(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    member: ConsumerMember,
    owned: Partitions | None,
    now_ms: int,
    metadata: TopicMetadata,
    *,
    subscription_changed: bool,
) -> None:
    """One reconciliation step for `member`; its revocation timer runs while it revokes."""

    def subscribed() -> set[str]:
        topics = metadata.topics
        return {topics[name].topic_id for name in member.subscribed_topics(metadata)}

    value = next_assignment(
        member,
        group.target.get(member.member_id, {}),
        group.target_epoch,
        group.owner_of,
        owned,
        subscribed,
        subscription_changed,
    )
    if value == member.current_value():
        return
    write(state, result, group.group_id, value)
    key = consumer_revocation_key(group.group_id, member.member_id)
    if member.classic is not None:
        pass  # a classic member's only timers are its join and sync timeouts (Kafka's)
    elif member.state is MemberState.UNREVOKED_PARTITIONS:
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
