"""Who a heartbeat is from: the group it names and the member it is, admitted, checked or
replaced (Kafka's `GroupMetadataManager.consumerGroupHeartbeat`, steps before the epochs).

* epoch 0 creates the group (an empty classic group of that id becomes a consumer group, offsets
  kept) and joins or rejoins the member; a static member whose previous incarnation left with
  epoch -2 is replaced and inherits its assignment;
* any other epoch must name a known member at an epoch the coordinator accepts;
* errors: GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
  GROUP_MAX_SIZE_REACHED, FENCED_MEMBER_EPOCH.
"""

from __future__ import annotations

from rebalance.classic.records import GroupMetadataRecord
from rebalance.consumer_group import migration
from rebalance.consumer_group.assignment_epochs import rebased
from rebalance.consumer_group.commands import (
    JOIN_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeat,
)
from rebalance.consumer_group.group import (
    GROUP_TYPE,
    NEW_GROUP_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    thaw,
)
from rebalance.consumer_group.records import (
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberValue,
    TargetMemberValue,
)
from rebalance.consumer_group.replay import remove_member, write
from rebalance.consumer_group.timers import consumer_revocation_key, consumer_session_key
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import ConsumerTrigger, EventType, ExpiryReason
from rebalance.state import CoordinatorState
from rebalance.topics import TopicMetadata


def find_group(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
) -> ConsumerGroup:
    """The group `cmd` names; a join creates it, converts an empty classic group, or converts
    a classic group with members online when the migration policy allows (`migration`)."""
    group = state.groups.get(cmd.group_id)
    joining = cmd.member_epoch == JOIN_EPOCH
    if group is None:
        if not joining:
            raise CoordinatorError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {cmd.group_id} not found."
            )
    elif not isinstance(group, ConsumerGroup):
        # Kafka converts an empty classic group (`maybeDeleteEmptyClassicGroup`, any policy); a
        # non-empty one online when `group.consumer.migration.policy` allows an upgrade.
        if joining and not group.empty and migration.upgrade_allowed(state, group):
            if len(group.members) >= state.config.group_consumer_max_size:
                # Kafka converts, then refuses the joining member and drops the conversion
                # with it: the answer is the full group's, the group stays classic.
                raise CoordinatorError(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The consumer group has reached its maximum capacity of "
                    f"{state.config.group_consumer_max_size} members.",
                )
            return migration.to_consumer(state, metadata, result, group, now_ms)
        if not (joining and group.empty):
            raise CoordinatorError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {cmd.group_id} is not a consumer group."
            )
        group = None
    if group is None:
        # The group epoch record creates it (replay converts an empty classic group, keeping its
        # offsets); epoch 1 with no subscribed topics yet: Kafka 4.4 starts a new group at 1
        # (ModernGroup), so the join's bump makes 2.
        classic = cmd.group_id in state.groups
        write(state, result, cmd.group_id, GroupEpochValue(NEW_GROUP_EPOCH, ()))
        if classic:  # clears the classic group's row; the consumer group stays
            state.apply(result, GroupMetadataRecord(cmd.group_id, None))
        created = state.groups[cmd.group_id]
        assert isinstance(created, ConsumerGroup)
        return created
    return group


def find_member(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
) -> tuple[ConsumerMember, ConsumerTrigger | None]:
    """The member this heartbeat is from, admitted or replaced if it joins; the trigger is
    MEMBER_JOINED when a new member was admitted."""
    # Kafka's `throwIfConsumerGroupIsFull`, before the member is looked up: a full group
    # answers any member id it does not hold so (a new static incarnation replacing a released
    # one, or a heartbeat from a member it no longer knows, included).
    if len(group.members) >= state.config.group_consumer_max_size and (
        cmd.member_id not in group.members
    ):
        raise CoordinatorError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of "
            f"{state.config.group_consumer_max_size} members.",
        )
    if cmd.member_epoch != JOIN_EPOCH:
        # A static member is looked up by its instance id first, as Kafka's
        # getOrMaybeSubscribeStaticConsumerGroupMember: a member id the group lacks under an
        # instance id another member holds is FENCED_INSTANCE_ID (checked against Kafka 4.4).
        if cmd.instance_id is not None:
            static_holder(group, cmd)
        member = group.members.get(cmd.member_id)
        if member is None:
            raise CoordinatorError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {cmd.member_id} is not a member of group {group.group_id}.",
            )
        _check_epoch(member, cmd)
        return member, None
    if cmd.instance_id is not None:
        holder = group.static_members.get(cmd.instance_id)
        if holder is not None:
            previous = group.members[holder]
            # A classic-protocol static member is replaced at once (Kafka checks the release
            # only when both incarnations use the consumer protocol). A static member that
            # rejoins with epoch 0 under its own member id while still active (its join's
            # answer lost, or after FENCED_MEMBER_EPOCH) is refused too, as Kafka 4.4 does
            # (checked against the broker; apache/kafka#23542 would take it back instead).
            if previous.member_epoch != STATIC_LEAVE_EPOCH and previous.classic is None:
                raise CoordinatorError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {cmd.member_id or '(new)'} with instance id "
                    f"{cmd.instance_id} cannot join the group because the instance id is "
                    f"owned by {holder} member.",
                )
            if holder != cmd.member_id:
                return _replace_static(state, result, group, previous, cmd, now_ms), None
    member_id = cmd.member_id or str(state.rng.uuid4())  # v0: the server chooses
    member = group.members.get(member_id)
    if member is not None:
        return member, None  # a rejoin: same member, it owns nothing now
    write(state, result, group.group_id, subscription(ConsumerMember(member_id), cmd))
    member = group.members[member_id]
    member_joined_event(
        result, group, member_id, now_ms, client_id=cmd.client_id, instance_id=cmd.instance_id
    )
    return member, ConsumerTrigger.MEMBER_JOINED


def update_subscription(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    member: ConsumerMember,
    cmd: ConsumerGroupHeartbeat,
) -> ConsumerTrigger | None:
    """Record what `cmd` changes of `member`'s subscription; SUBSCRIPTION_CHANGED when the
    change can move partitions (topics, regex, assignor, rack)."""
    value = subscription(member, cmd)
    old = member.subscription_value()
    if value == old:
        return None
    write(state, result, group.group_id, value)
    if (
        value.subscribed_topic_names != old.subscribed_topic_names
        or value.subscribed_topic_regex != old.subscribed_topic_regex
        or value.server_assignor != old.server_assignor
        or value.rack_id != old.rack_id
    ):
        return ConsumerTrigger.SUBSCRIPTION_CHANGED
    return None


def subscription(member: ConsumerMember, cmd: ConsumerGroupHeartbeat) -> MemberValue:
    """`member`'s subscription with the fields `cmd` sets (None: unchanged)."""
    return MemberValue(
        member.member_id,
        cmd.instance_id if cmd.instance_id is not None else member.instance_id,
        cmd.rack_id if cmd.rack_id is not None else member.rack_id,
        cmd.client_id,
        cmd.client_host,
        cmd.rebalance_timeout_ms if cmd.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        cmd.subscribed_topic_names
        if cmd.subscribed_topic_names is not None
        else member.subscribed_topic_names,
        # Kafka: an empty regex clears it.
        (cmd.subscribed_topic_regex or None)
        if cmd.subscribed_topic_regex is not None
        else member.subscribed_topic_regex,
        cmd.server_assignor if cmd.server_assignor is not None else member.server_assignor,
    )


def static_holder(group: ConsumerGroup, cmd: ConsumerGroupHeartbeat) -> str:
    """The member id holding `cmd`'s instance id, which must be `cmd`'s own member id (as
    Kafka's `throwIfStaticMemberIsUnknown` / `throwIfInstanceIdIsFenced`)."""
    assert cmd.instance_id is not None
    holder = group.static_members.get(cmd.instance_id)
    if holder is None:
        raise CoordinatorError(
            ErrorCode.UNKNOWN_MEMBER_ID,
            f"Instance id {cmd.instance_id} is unknown in group {group.group_id}.",
        )
    if holder != cmd.member_id:
        raise CoordinatorError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {cmd.member_id} with instance id {cmd.instance_id} was fenced "
            f"by member {holder}.",
        )
    return holder


def _check_epoch(member: ConsumerMember, cmd: ConsumerGroupHeartbeat) -> None:
    """Kafka's `throwIfMemberEpochIsInvalid`: an epoch ahead of ours, or behind it other than
    the previous epoch with a subset of the current partitions (the reply that bumped it may
    have been lost), fences the member."""
    received = cmd.member_epoch
    if received > member.member_epoch:
        raise CoordinatorError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the "
            f"one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch:
        owned = thaw(cmd.topic_partitions or ())
        subset = cmd.topic_partitions is not None and all(
            ps <= member.assigned.get(t, set()) for t, ps in owned.items()
        )
        if received != member.previous_member_epoch or not subset:
            raise CoordinatorError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received}) than "
                f"the one known by the group coordinator ({member.member_epoch}). The "
                "member must abandon all its partitions and rejoin.",
            )


def _replace_static(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    previous: ConsumerMember,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
) -> ConsumerMember:
    """A static member back after its temporary leave (-2): the new member id takes over the
    old one's subscription, target and current assignment at once, so the partitions never
    move (KIP-345's promise, kept by KIP-848)."""
    member_id = cmd.member_id or str(state.rng.uuid4())
    target = group.target.frozen.get(previous.member_id, ())
    current = previous.current_value()
    epoch = current.previous_member_epoch if current.member_epoch < 0 else current.member_epoch
    epochs = rebased(previous, epoch)  # its partitions keep their epochs (Kafka copies them)
    remove_member(state, result, group, previous)
    state.cancel(result, consumer_session_key(group.group_id, previous.member_id))
    state.cancel(result, consumer_revocation_key(group.group_id, previous.member_id))
    write(state, result, group.group_id, subscription(ConsumerMember(member_id), cmd))
    write(state, result, group.group_id, TargetMemberValue(member_id, target))
    write(
        state,
        result,
        group.group_id,
        CurrentAssignmentValue(
            member_id,
            epoch,
            current.previous_member_epoch,
            current.state,
            current.assigned,
            current.pending_revocation,
            epochs,
        ),
    )
    member_replaced_event(result, group, previous.member_id, now_ms)
    member_joined_event(
        result, group, member_id, now_ms, client_id=cmd.client_id, instance_id=cmd.instance_id
    )
    return group.members[member_id]


def member_replaced_event(
    result: Result, group: ConsumerGroup, previous_id: str, now_ms: int
) -> None:
    """The `member_expired` event (reason `replaced`) of a static member whose instance id a new
    member took, KIP-848 or classic."""
    result.event(
        EventType.MEMBER_EXPIRED,
        now_ms,
        group.group_id,
        group.group_epoch,
        previous_id,
        group_type=GROUP_TYPE,
        reason=ExpiryReason.REPLACED,
    )


def member_joined_event(
    result: Result,
    group: ConsumerGroup,
    member_id: str,
    now_ms: int,
    *,
    client_id: str,
    instance_id: str | None,
    protocols: list[str] | None = None,
) -> None:
    """The `member_joined` event of a consumer group, for a KIP-848 member (no protocols: the
    coordinator assigns) or a classic member joining with its JoinGroup's protocols."""
    result.event(
        EventType.MEMBER_JOINED,
        now_ms,
        group.group_id,
        group.group_epoch,
        member_id,
        group_type=GROUP_TYPE,
        client_id=client_id,
        instance_id=instance_id,
        protocols=protocols or [],
    )
