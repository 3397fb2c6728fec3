"""Classic requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) addressed to a consumer group.

A group id is one type at a time, and Kafka answers a classic request to a consumer group from
the consumer group (`GroupMetadataManager.classicGroup*ToConsumerGroup`):

* JoinGroup to an *empty* consumer group turns it into a classic group, whatever
  `group.consumer.migration.policy` says (`maybeDeleteEmptyConsumerGroup`): the consumer
  group's records are deleted, its committed offsets stay with the id (`to_classic`).
* JoinGroup to a consumer group with members admits the client as a *classic-protocol member*
  of the consumer group (online migration): after Kafka's checks (group full, protocol type
  "consumer" with a protocol every classic member supports, KIP-394's MEMBER_ID_REQUIRED round
  trip), its subscription is read from its ConsumerProtocol metadata, the group epoch bumps if
  it is new or its subscription changed, and it reconciles one step towards its target with the
  partitions its metadata says it owns. The answer comes at once: generation = its member epoch,
  no leader (nobody assigns: the server does), so the client follows with SyncGroup. A static
  member's instance id rejoining by JoinGroup replaces it (its partitions kept); if it was the
  group's last KIP-848 member, the group becomes a classic group there and then (`migration`).
* SyncGroup from a classic member returns its current assignment as ConsumerProtocol bytes, or
  REBALANCE_IN_PROGRESS when the group epoch moved past its epoch (it must rejoin first).
* Heartbeat from a classic member answers REBALANCE_IN_PROGRESS when it has something to do:
  the group epoch moved past its epoch, it must revoke partitions, or partitions it waited for
  were released. Each of those arms a join timeout (its rebalance timeout): a member that does
  not rejoin is fenced, as one that joined and never syncs is by its sync timeout.
* Requests from a member that uses the consumer protocol get UNKNOWN_MEMBER_ID (FENCED_INSTANCE_ID
  for another member's instance id), and a wrong generation ILLEGAL_GENERATION.
* LeaveGroup: per member. A classic member leaves by member id; by instance id alone (the
  admin client's `removeMembersFromConsumerGroup`) a static member is removed, as Kafka removes
  it; then the group epoch bumps once for all of them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

from assignors.consumer_protocol import ConsumerProtocolError, Subscription, decode_subscription
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.records import GroupMetadataRecord, GroupMetadataValue
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    SyncGroupReply,
)
from rebalance.consumer_group import migration
from rebalance.consumer_group.assignment_epochs import rebased
from rebalance.consumer_group.departure import remove
from rebalance.consumer_group.epochs import maybe_bump, reconcile
from rebalance.consumer_group.group import ConsumerGroup, ConsumerMember, MemberState
from rebalance.consumer_group.membership import member_joined_event, member_replaced_event
from rebalance.consumer_group.migration import encode_partitions, protocol_version, to_ids
from rebalance.consumer_group.records import (
    ClassicMetadata,
    ConsumerGroupRecord,
    MemberValue,
    RecordKind,
    TargetMemberValue,
    Tombstone,
)
from rebalance.consumer_group.replay import remove_member, write
from rebalance.consumer_group.timers import (
    CONSUMER_CLASSIC_JOIN,
    CONSUMER_CLASSIC_SYNC,
    consumer_revocation_key,
    consumer_session_key,
)
from rebalance.effects import Result, single_reply
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import ConsumerTrigger, LeaveReason
from rebalance.state import CoordinatorState
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE
from rebalance.timers import TimerKey
from rebalance.topics import TopicMetadata

#: JoinGroup v4+ (KIP-394): a dynamic member first gets an id and must rejoin with it.
MEMBER_ID_REQUIRED_VERSION = 4


def to_classic(state: CoordinatorState, result: Result, group: ConsumerGroup, now_ms: int) -> None:
    """An empty consumer group becomes an empty classic group (a JoinGroup with no member id
    arrived). The classic group's record comes first, so replay converts the group in place and
    its offsets stay; the consumer group's tombstones then only clear its rows from the store."""
    assert not group.members
    group_id = group.group_id
    if group.target_epoch:
        write(state, result, group_id, Tombstone(RecordKind.TARGET_EPOCH, ""))
    value = GroupMetadataValue(None, 0, None, None, now_ms, ())
    state.apply(result, GroupMetadataRecord(group_id, value))
    state.apply(result, ConsumerGroupRecord(group_id, None))


def _join_key(group_id: str, member_id: str) -> TimerKey:
    return (CONSUMER_CLASSIC_JOIN, group_id, member_id)


def _sync_key(group_id: str, member_id: str) -> TimerKey:
    return (CONSUMER_CLASSIC_SYNC, group_id, member_id)


# -- JoinGroup ------------------------------------------------------------------------------
def join(
    state: CoordinatorState,
    metadata: TopicMetadata,
    group: ConsumerGroup,
    cmd: JoinGroup,
    now_ms: int,
    token: Hashable,
) -> Result:
    """A classic JoinGroup to a consumer group with members (Kafka's
    `classicGroupJoinToConsumerGroup`). Every check runs before the first record."""
    full = len(group.members) >= state.config.group_consumer_max_size
    if full and cmd.member_id not in group.members:
        return single_reply(token, JoinGroupReply(ErrorCode.GROUP_MAX_SIZE_REACHED))
    if not _supports(group, cmd):
        return single_reply(token, JoinGroupReply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    unknown = cmd.member_id == ""
    if unknown and cmd.group_instance_id is None and cmd.version >= MEMBER_ID_REQUIRED_VERSION:
        new_id = str(state.rng.uuid4())
        return single_reply(token, JoinGroupReply(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
    try:
        subscription = decode_subscription(cmd.protocols[0][1])
    except ConsumerProtocolError:
        # Kafka: "Malformed embedded consumer protocol in subscription deserialization."
        return single_reply(
            token, JoinGroupReply(ErrorCode.UNKNOWN_SERVER_ERROR, member_id=cmd.member_id)
        )
    instance_id = cmd.group_instance_id
    holder = group.static_members.get(instance_id) if instance_id is not None else None
    if instance_id is not None and not unknown:
        if holder is None:
            return single_reply(
                token, JoinGroupReply(ErrorCode.UNKNOWN_MEMBER_ID, member_id=cmd.member_id)
            )
        if holder != cmd.member_id:
            return single_reply(
                token, JoinGroupReply(ErrorCode.FENCED_INSTANCE_ID, member_id=cmd.member_id)
            )
    member_id = cmd.member_id or str(state.rng.uuid4())
    result = Result()
    trigger: ConsumerTrigger | None = None
    downgrade = False
    if holder is not None and holder != member_id:
        downgrade = migration.downgrade_allowed_replacing(state, group, holder)
        _replace(state, result, group, group.members[holder], member_id, now_ms)
    member = group.members.get(member_id) or ConsumerMember(member_id)
    if member_id not in group.members:
        trigger = ConsumerTrigger.MEMBER_JOINED
    value = _classic_subscription(member, cmd, subscription)
    old = member.subscription_value()
    if value != old:
        write(state, result, group.group_id, value)
        if trigger is None and (
            value.subscribed_topic_names != old.subscribed_topic_names
            or value.rack_id != old.rack_id
        ):
            trigger = ConsumerTrigger.SUBSCRIPTION_CHANGED
    member = group.members[member_id]
    if trigger is ConsumerTrigger.MEMBER_JOINED or holder not in (None, member_id):
        member_joined_event(
            result,
            group,
            member_id,
            now_ms,
            client_id=cmd.client_id,
            instance_id=instance_id,
            protocols=[name for name, _ in cmd.protocols],
        )
    maybe_bump(
        state,
        metadata,
        result,
        group,
        trigger,
        now_ms,
        check_metadata=trigger is not None or group.metadata_refresh,
    )
    owned = to_ids(subscription.owned_partitions, metadata)
    reconcile(
        state,
        result,
        group,
        member,
        owned,
        now_ms,
        metadata,
        subscription_changed=trigger is ConsumerTrigger.SUBSCRIPTION_CHANGED,
    )
    assert member.classic is not None
    reply = JoinGroupReply(
        ErrorCode.NONE,
        generation_id=member.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=member.classic.protocols[0][0],
        leader="",  # nobody assigns: the server does; the member follows with SyncGroup
        member_id=member_id,
    )
    if downgrade:
        # The last KIP-848 member was a static member this classic one replaced: the group is
        # classic again, the new member in its place with its assignment, and no rebalance.
        migration.to_classic(state, metadata, result, group, now_ms, rebalance=False)
    else:
        state.cancel(result, _join_key(group.group_id, member_id))
        state.schedule(
            result,
            consumer_session_key(group.group_id, member_id),
            now_ms + cmd.session_timeout_ms,
        )
        state.schedule(
            result, _sync_key(group.group_id, member_id), now_ms + member.rebalance_timeout_ms
        )
    result.reply(token, reply)
    return result


def _supports(group: ConsumerGroup, cmd: JoinGroup) -> bool:
    """Kafka's `ConsumerGroup.supportsClassicProtocols`: protocol type "consumer" and one of
    the member's protocols that every classic member of the group supports."""
    if cmd.protocol_type != CONSUMER_PROTOCOL_TYPE or not cmd.protocols:
        return False
    supported = [
        {name for name, _ in m.classic.protocols}
        for m in group.members.values()
        if m.classic is not None
    ]
    return any(all(name in names for names in supported) for name, _ in cmd.protocols)


def _classic_subscription(
    member: ConsumerMember, cmd: JoinGroup, subscription: Subscription
) -> MemberValue:
    """`member`'s subscription as this JoinGroup sets it (Kafka keeps the regex and the server
    assignor, which a classic member cannot send)."""
    return MemberValue(
        member.member_id,
        cmd.group_instance_id if cmd.group_instance_id is not None else member.instance_id,
        subscription.rack if subscription.rack is not None else member.rack_id,
        cmd.client_id,
        cmd.client_host,
        cmd.rebalance_timeout_ms if cmd.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        tuple(subscription.topics),
        member.subscribed_topic_regex,
        member.server_assignor,
        ClassicMetadata(cmd.session_timeout_ms, tuple(cmd.protocols)),
    )


def _replace(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    previous: ConsumerMember,
    member_id: str,
    now_ms: int,
) -> None:
    """A static member rejoining under a new member id by JoinGroup takes over its instance's
    subscription, target and current assignment (at member epoch 0, as Kafka copies it), so its
    partitions do not move."""
    target = group.target.frozen.get(previous.member_id, ())
    subscription = previous.subscription_value()
    current = replace(previous.current_value(), epochs=rebased(previous, 0))
    remove_member(state, result, group, previous)
    for key in (
        consumer_session_key(group.group_id, previous.member_id),
        consumer_revocation_key(group.group_id, previous.member_id),
        _join_key(group.group_id, previous.member_id),
        _sync_key(group.group_id, previous.member_id),
    ):
        state.cancel(result, key)
    write(
        state,
        result,
        group.group_id,
        MemberValue(member_id, *(getattr(subscription, f) for f in _SUBSCRIPTION_FIELDS)),
    )
    write(state, result, group.group_id, TargetMemberValue(member_id, target))
    # The copy keeps each partition's assignment epoch (Kafka copies `assignedPartitions`).
    moved = replace(current, member_id=member_id, member_epoch=0, previous_member_epoch=0)
    write(state, result, group.group_id, moved)
    member_replaced_event(result, group, previous.member_id, now_ms)


_SUBSCRIPTION_FIELDS = (
    "instance_id",
    "rack_id",
    "client_id",
    "client_host",
    "rebalance_timeout_ms",
    "subscribed_topic_names",
    "subscribed_topic_regex",
    "server_assignor",
    "classic",
)


# -- SyncGroup, Heartbeat -----------------------------------------------------------------------
def _classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerMember:
    """Kafka's `validateConsumerGroupMember` then `throwIfMemberDoesNotUseClassicProtocol`."""
    if instance_id is not None:
        holder = group.static_members.get(instance_id)
        if holder is None:
            raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
        if holder != member_id:
            raise CoordinatorError(ErrorCode.FENCED_INSTANCE_ID)
    member = group.members.get(member_id)
    if member is None or member.classic is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    return member


def _check_generation(member: ConsumerMember, generation_id: int) -> None:
    if generation_id != member.member_epoch:
        raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)


def _ask_rejoin(
    state: CoordinatorState,
    result: Result,
    group: ConsumerGroup,
    member: ConsumerMember,
    now_ms: int,
) -> None:
    """REBALANCE_IN_PROGRESS is on its way to `member`: it must rejoin within its rebalance
    timeout (the first such answer arms the timer; later ones leave it)."""
    key = _join_key(group.group_id, member.member_id)
    if key not in state.timers:
        state.schedule(result, key, now_ms + member.rebalance_timeout_ms)


def sync(
    state: CoordinatorState,
    metadata: TopicMetadata,
    group: ConsumerGroup,
    cmd: SyncGroup,
    now_ms: int,
    token: Hashable,
) -> Result:
    """SyncGroup from a classic member (Kafka's `classicGroupSyncToConsumerGroup`): its
    current assignment, once it has caught up with the group epoch."""
    result = Result()
    try:
        member = _classic_member(group, cmd.member_id, cmd.group_instance_id)
        _check_generation(member, cmd.generation_id)
        assert member.classic is not None
        protocol = member.classic.protocols[0]
        if (cmd.protocol_type is not None and cmd.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            cmd.protocol_name is not None and cmd.protocol_name != protocol[0]
        ):
            raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        # A member revoking has rejoined already: it syncs, revokes, and rejoins by itself.
        if (
            group.group_epoch > member.member_epoch
            and member.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            _ask_rejoin(state, result, group, member, now_ms)
            raise CoordinatorError(ErrorCode.REBALANCE_IN_PROGRESS)
    except CoordinatorError as exc:
        result.reply(token, SyncGroupReply(exc.code))
        return result
    state.cancel(result, _sync_key(group.group_id, member.member_id))
    state.schedule(
        result,
        consumer_session_key(group.group_id, member.member_id),
        now_ms + member.classic.session_timeout_ms,
    )
    assignment = encode_partitions(member.assigned, metadata, protocol_version(protocol[1]))
    result.reply(
        token,
        SyncGroupReply(
            ErrorCode.NONE,
            assignment,
            protocol_type=cmd.protocol_type,
            protocol_name=cmd.protocol_name,
        ),
    )
    return result


def heartbeat(
    state: CoordinatorState, group: ConsumerGroup, cmd: Heartbeat, now_ms: int, token: Hashable
) -> Result:
    """Heartbeat from a classic member (Kafka's `classicGroupHeartbeatToConsumerGroup`)."""
    result = Result()
    try:
        member = _classic_member(group, cmd.member_id, cmd.group_instance_id)
        _check_generation(member, cmd.generation_id)
    except CoordinatorError as exc:
        return single_reply(token, HeartbeatReply(exc.code))
    assert member.classic is not None
    state.schedule(
        result,
        consumer_session_key(group.group_id, member.member_id),
        now_ms + member.classic.session_timeout_ms,
    )
    error = ErrorCode.NONE
    if (
        member.member_epoch < group.group_epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (
            member.state is MemberState.UNRELEASED_PARTITIONS
            and not _waits_on_unreleased(group, member)
        )
    ):
        error = ErrorCode.REBALANCE_IN_PROGRESS
        _ask_rejoin(state, result, group, member, now_ms)
    result.reply(token, HeartbeatReply(error))
    return result


def _waits_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's `waitingOnUnreleasedPartition`: a target partition of `member` it does not
    have yet is still held by another member."""
    for topic_id, partitions in group.target.get(member.member_id, {}).items():
        assigned = member.assigned.get(topic_id, set())
        for p in partitions - assigned:
            if group.owner_of(topic_id, p) not in (None, member.member_id):
                return True
    return False


# -- LeaveGroup -----------------------------------------------------------------------------
def leave(
    state: CoordinatorState,
    metadata: TopicMetadata,
    group: ConsumerGroup,
    cmd: LeaveGroup,
    now_ms: int,
) -> tuple[Result, LeaveGroupReply]:
    """LeaveGroup to a consumer group (Kafka's `classicGroupLeaveToConsumerGroup`): classic
    members by member id; static members named by instance id (fenced only if a different
    member id is given); then the group epoch bumps once for all of them."""
    result = Result()
    answers: list[LeftMember] = []
    leaving: list[tuple[ConsumerMember, LeaveReason]] = []
    for asked in cmd.members:
        error = ErrorCode.UNKNOWN_MEMBER_ID
        member: ConsumerMember | None = None
        if asked.group_instance_id is not None:
            holder = group.static_members.get(asked.group_instance_id)
            if holder is not None:
                if asked.member_id not in ("", holder):
                    error = ErrorCode.FENCED_INSTANCE_ID
                else:
                    member = group.members[holder]
        else:
            found = group.members.get(asked.member_id)
            if found is not None and found.classic is not None:
                member = found
        if member is not None:
            error = ErrorCode.NONE
            reason = LeaveReason.LEAVE if asked.member_id else LeaveReason.ADMIN_REMOVAL
            if all(member is not m for m, _ in leaving):
                leaving.append((member, reason))
        answers.append(LeftMember(asked.member_id, asked.group_instance_id, error))
    for member, reason in leaving:
        remove(state, result, group, member, now_ms, None, reason)
    if leaving:
        # Kafka's `classicGroupLeaveToConsumerGroup`: removals and the epoch bump only; the
        # next heartbeat computes the target (as `departure.fence`).
        maybe_bump(
            state, metadata, result, group, ConsumerTrigger.MEMBER_LEFT, now_ms, retarget=False
        )
    return result, LeaveGroupReply(ErrorCode.NONE, tuple(answers))
