"""Classic requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) addressed to a consumer group.

A group id is one type at a time, and Kafka answers a classic request to a consumer group from
the consumer group (`GroupMetadataManager.classicGroup*ToConsumerGroup`):

* JoinGroup to an *empty* consumer group turns it into a classic group, whatever
  `group.consumer.migration.policy` says (`maybeDeleteEmptyConsumerGroup`): the consumer
  group's records are deleted, its committed offsets stay with the id (`to_classic`).
* JoinGroup to a consumer group with members: the checks Kafka makes before admitting a classic
  member (group full, protocol type "consumer" with at least one protocol, KIP-394's
  MEMBER_ID_REQUIRED round trip), then the admission itself.
  DIFFERS: Kafka admits the member as a classic-protocol member of the consumer group (the
  server assignor assigns it; its JoinGroup/SyncGroup/Heartbeat are translated; when the last
  KIP-848 member leaves, the group is converted back to classic under the migration policy).
  That online migration of a group with members is not implemented here: the join is refused
  with INCONSISTENT_GROUP_PROTOCOL, Kafka's answer when a group cannot take a member's
  protocols.
* SyncGroup and Heartbeat: every member of our consumer groups uses the consumer protocol, so
  Kafka's checks end at "member does not use the classic protocol": UNKNOWN_MEMBER_ID, or
  FENCED_INSTANCE_ID when the instance id belongs to another member id. These are Kafka's exact
  answers, since a consumer group here never holds a classic member.
* LeaveGroup: per member. By instance id alone (the admin client's `removeMembersFromConsumer
  Group`) a static member is removed, as Kafka removes it; by member id, UNKNOWN_MEMBER_ID
  (not a classic member).
"""

from __future__ import annotations

from rebalance.commands import JoinGroup, LeaveGroup
from rebalance.consumer_group.departure import remove
from rebalance.consumer_group.epochs import maybe_bump
from rebalance.consumer_group.group import ConsumerGroup, ConsumerMember, TopicMetadata
from rebalance.consumer_group.records import ConsumerGroupRecord, RecordKind, Tombstone
from rebalance.consumer_group.replay import write
from rebalance.effects import Result
from rebalance.errors import ErrorCode
from rebalance.event_schema import ConsumerTrigger, LeaveReason
from rebalance.records import GroupMetadataRecord, GroupMetadataValue
from rebalance.replies import JoinGroupReply, LeaveGroupReply, LeftMember
from rebalance.state import CoordinatorState
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE

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


def refuse_join(state: CoordinatorState, group: ConsumerGroup, cmd: JoinGroup) -> JoinGroupReply:
    """Kafka's checks of a classic JoinGroup to a consumer group with members, in its order."""
    full = len(group.members) >= state.config.group_consumer_max_size
    if full and cmd.member_id not in group.members:
        return JoinGroupReply(ErrorCode.GROUP_MAX_SIZE_REACHED)
    if cmd.protocol_type != CONSUMER_PROTOCOL_TYPE or not cmd.protocols:
        return JoinGroupReply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if (
        cmd.member_id == ""
        and cmd.group_instance_id is None
        and cmd.version >= MEMBER_ID_REQUIRED_VERSION
    ):
        return JoinGroupReply(ErrorCode.MEMBER_ID_REQUIRED, member_id=str(state.rng.uuid4()))
    # DIFFERS (module docstring): Kafka would admit a classic member here.
    return JoinGroupReply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=cmd.member_id)


def member_error(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ErrorCode:
    """SyncGroup and Heartbeat from a classic client (Kafka's `validateConsumerGroupMember`
    then `throwIfMemberDoesNotUseClassicProtocol`)."""
    if instance_id is not None:
        holder = group.static_members.get(instance_id)
        if holder is not None and holder != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    return ErrorCode.UNKNOWN_MEMBER_ID


def leave(
    state: CoordinatorState,
    metadata: TopicMetadata,
    group: ConsumerGroup,
    cmd: LeaveGroup,
    now_ms: int,
) -> tuple[Result, LeaveGroupReply]:
    """LeaveGroup to a consumer group (Kafka's `classicGroupLeaveToConsumerGroup`): static
    members named by instance id are removed (fenced only if a different member id is given),
    then the group epoch bumps once for all of them."""
    result = Result()
    answers: list[LeftMember] = []
    leaving: list[ConsumerMember] = []
    for asked in cmd.members:
        error = ErrorCode.UNKNOWN_MEMBER_ID
        if asked.group_instance_id is not None:
            holder = group.static_members.get(asked.group_instance_id)
            if holder is not None:
                if asked.member_id not in ("", holder):
                    error = ErrorCode.FENCED_INSTANCE_ID
                else:
                    error = ErrorCode.NONE
                    member = group.members[holder]
                    if member not in leaving:
                        leaving.append(member)
        answers.append(LeftMember(asked.member_id, asked.group_instance_id, error))
    for member in leaving:
        remove(state, result, group, member, now_ms, None, LeaveReason.ADMIN_REMOVAL)
    if leaving:
        maybe_bump(state, metadata, result, group, ConsumerTrigger.MEMBER_LEFT, now_ms)
    return result, LeaveGroupReply(ErrorCode.NONE, tuple(answers))
