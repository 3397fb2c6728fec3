"""Online migration between classic and consumer groups (`group.consumer.migration.policy`).

Kafka 4.0 converts a group with members between the two types (`GroupMetadataManager`'s
`validateOnlineUpgrade` / `convertToConsumerGroup` and `validateOnlineDowngradeWithFencedMember`
/ `convertToClassicGroup`), so a running application can move to KIP-848 one consumer at a
time, and back:

* **upgrade**: a ConsumerGroupHeartbeat joining (epoch 0) a classic group with members converts
  it, if the policy allows an upgrade (`upgrade`, `bidirectional`), the group's protocol type is
  "consumer" and it has no more members than `group.consumer.max.size`; otherwise the answer is
  GROUP_ID_NOT_FOUND. Each classic member becomes a classic-protocol member of the consumer
  group at the classic generation, keeping the partitions its ConsumerProtocol assignment gives
  it (as its current and its target assignment), so nobody loses a partition by the conversion
  itself; the joining member then bumps the group epoch and the group reconciles as any other.
  Parked JoinGroup/SyncGroup requests of the classic group are answered REBALANCE_IN_PROGRESS,
  so those members rejoin the consumer group.
* **downgrade**: when the last KIP-848 member of a consumer group whose other members all use
  the classic protocol leaves (clean leave, session or revocation timeout), the group becomes a
  classic group, if the policy allows a downgrade (`downgrade`, `bidirectional`) and the
  remaining members are no more than `group.max.size`: each keeps its target assignment, the
  generation is the group epoch, and a rebalance starts at once (the members learn it from
  their next heartbeat, REBALANCE_IN_PROGRESS). Likewise, without a rebalance, when a classic
  JoinGroup replaces the group's last KIP-848 member, a static one, by its instance id.

Both conversions are records, written in an order replay turns into the same group: the new
type's records come first for an upgrade (the first converts the classic group in place, its
offsets kept; the classic tombstone then only clears the old row), and for a downgrade the
consumer group's keys are tombstoned first, then the classic group's record converts it.
"""

from __future__ import annotations

from assignors.consumer_protocol import (
    Assignment as ProtocolAssignment,
)
from assignors.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from rebalance.classic.group import Group
from rebalance.classic.rebalance import prepare_rebalance
from rebalance.classic.records import GroupMetadataRecord, GroupMetadataValue, MemberMetadataValue
from rebalance.classic.replies import JoinGroupReply, SyncGroupReply
from rebalance.classic.timers import join_key, pending_key, session_key, sync_key
from rebalance.consumer_group.epochs import subscribed_metadata
from rebalance.consumer_group.group import (
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    freeze,
)
from rebalance.consumer_group.records import (
    ClassicMetadata,
    ConsumerGroupRecord,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberValue,
    RecordKind,
    TargetEpochValue,
    TargetMemberValue,
    Tombstone,
)
from rebalance.consumer_group.replay import remove_member, write
from rebalance.consumer_group.timers import (
    CONSUMER_CLASSIC_JOIN,
    CONSUMER_CLASSIC_SYNC,
    CONSUMER_REVOCATION,
    CONSUMER_SESSION,
)
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import Trigger
from rebalance.lifecycle import GroupState
from rebalance.state import CoordinatorState
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE
from rebalance.topics import TopicMetadata

#: The ConsumerProtocol versions an assignment can be written in.
_HIGHEST_ASSIGNMENT_VERSION = 3

_REBALANCING_SYNC = SyncGroupReply(ErrorCode.REBALANCE_IN_PROGRESS)


# -- shared: ConsumerProtocol bytes <-> the consumer group's topic-id assignments ------------
def protocol_version(metadata: bytes) -> int:
    """The ConsumerProtocol version a member's subscription was written in (Kafka writes the
    member's assignment in that version, capped at the highest it knows)."""
    if len(metadata) < 2:
        return 0
    return max(0, min(int.from_bytes(metadata[:2], "big", signed=True), 3))


def to_ids(pairs: tuple[tuple[str, int], ...], metadata: TopicMetadata) -> Partitions:
    """(topic name, partition) pairs keyed by topic id; topics the metadata does not know are
    dropped, as Kafka's `toTopicPartitionMap` drops them."""
    partitions: Partitions = {}
    for name, partition in pairs:
        info = metadata.topics.get(name)
        if info is not None:
            partitions.setdefault(info.topic_id, set()).add(partition)
    return partitions


def encode_partitions(partitions: Partitions, metadata: TopicMetadata, version: int) -> bytes:
    """A ConsumerProtocol Assignment of `partitions` (by topic id) in `version`."""
    by_id = metadata.by_id()
    pairs = tuple(
        (by_id[topic_id].name, p)
        for topic_id, ps in partitions.items()
        if topic_id in by_id
        for p in sorted(ps)
    )
    return encode_assignment(ProtocolAssignment(pairs), min(version, _HIGHEST_ASSIGNMENT_VERSION))


# -- upgrade: classic group -> consumer group ------------------------------------------------
def upgrade_allowed(state: CoordinatorState, group: Group) -> bool:
    """Kafka's `validateOnlineUpgrade`."""
    return (
        state.config.group_consumer_migration_policy in ("upgrade", "bidirectional")
        and group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and len(group.members) <= state.config.group_consumer_max_size
    )


def to_consumer(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    classic: Group,
    now_ms: int,
) -> ConsumerGroup:
    """Convert `classic` (with members) into a consumer group (Kafka's `convertToConsumerGroup`
    and `ConsumerGroup.fromClassicGroup`). Raises GROUP_ID_NOT_FOUND, before any change, when a
    member's ConsumerProtocol bytes cannot be read, and UNSUPPORTED_VERSION when an assignment
    carries user data (a custom assignor's, which the consumer group would lose)."""
    group_id = classic.group_id
    generation = classic.generation
    members = [_converted(classic, m.member_id, metadata) for m in classic.members.values()]
    # Answer what the classic group holds parked: those members rejoin the consumer group.
    for member in classic.members.values():
        if member.join_token is not None:
            rebalancing = JoinGroupReply(
                ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id
            )
            result.reply(member.join_token, rebalancing)
            member.join_token = None
        if member.sync_token is not None:
            result.reply(member.sync_token, _REBALANCING_SYNC)
            member.sync_token = None
        state.cancel(result, session_key(group_id, member.member_id))
        state.cancel(result, pending_key(group_id, member.member_id))
    for member_id in classic.pending_join:
        state.cancel(result, pending_key(group_id, member_id))
    state.cancel(result, join_key(group_id))
    state.cancel(result, sync_key(group_id))
    # Never two owners, even from a classic group whose assignments overlap (a member's
    # stale assignment): the first member (join order) keeps a partition.
    claimed: set[tuple[str, int]] = set()
    for _, _, partitions in members:
        for topic_id in list(partitions):
            mine = {p for p in partitions[topic_id] if (topic_id, p) not in claimed}
            claimed.update((topic_id, p) for p in mine)
            partitions[topic_id] = mine
    for value, _, _ in members:
        write(state, result, group_id, value)  # the first converts the group in place
    group = state.groups[group_id]
    assert isinstance(group, ConsumerGroup)
    write(
        state, result, group_id, GroupEpochValue(generation, subscribed_metadata(group, metadata))
    )
    for value, _, partitions in members:
        write(state, result, group_id, TargetMemberValue(value.member_id, freeze(partitions)))
    write(state, result, group_id, TargetEpochValue(generation))
    for value, _, partitions in members:
        write(
            state,
            result,
            group_id,
            CurrentAssignmentValue(
                value.member_id,
                generation,
                generation,
                str(MemberState.STABLE),
                freeze(partitions),
                (),
            ),
        )
    state.apply(result, GroupMetadataRecord(group_id, None))  # clears the classic row
    for value, session_timeout_ms, _ in members:
        state.schedule(
            result,
            (CONSUMER_SESSION, group_id, value.member_id),
            now_ms + session_timeout_ms,
        )
    return group


def _converted(
    classic: Group, member_id: str, metadata: TopicMetadata
) -> tuple[MemberValue, int, Partitions]:
    member = classic.members[member_id]
    protocol = classic.protocol_name
    try:
        subscription = decode_subscription(
            member.metadata_for(protocol) if protocol is not None else member.protocols[0][1]
        )
        assignment = decode_assignment(member.assignment) if member.assignment else None
    except (ConsumerProtocolError, KeyError, IndexError):
        raise CoordinatorError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade the classic group {classic.group_id} to consumer group because "
            "the embedded consumer protocol is malformed.",
        ) from None
    if assignment is not None and assignment.user_data:
        raise CoordinatorError(
            ErrorCode.UNSUPPORTED_VERSION, "userData from a custom assignor would be lost"
        )
    value = MemberValue(
        member_id,
        member.group_instance_id,
        subscription.rack,
        member.client_id,
        member.client_host,
        member.rebalance_timeout_ms,
        tuple(subscription.topics),
        None,
        None,
        ClassicMetadata(member.session_timeout_ms, tuple(member.protocols)),
    )
    partitions = to_ids(assignment.partitions, metadata) if assignment is not None else {}
    return value, member.session_timeout_ms, partitions


# -- downgrade: consumer group -> classic group -----------------------------------------------
def downgrade_allowed(state: CoordinatorState, group: ConsumerGroup, leaving: str) -> bool:
    """Kafka's `validateOnlineDowngradeWithFencedMember`: `leaving` is the group's last
    KIP-848 member, someone stays, the policy allows it and the rest fit a classic group."""
    others = [m for m_id, m in group.members.items() if m_id != leaving]
    return (
        leaving in group.members
        and group.members[leaving].classic is None
        and bool(others)
        and all(m.classic is not None for m in others)
        and state.config.group_consumer_migration_policy in ("downgrade", "bidirectional")
        and len(others) <= state.config.group_max_size
        and _common_protocols(others)
    )


def downgrade_allowed_replacing(
    state: CoordinatorState, group: ConsumerGroup, replaced: str
) -> bool:
    """Kafka's `validateOnlineDowngradeWithReplacedMemberId`: a classic JoinGroup replaces the
    static member `replaced`, the group's last KIP-848 member; the policy allows a downgrade
    and the members fit a classic group."""
    others = [m for m_id, m in group.members.items() if m_id != replaced]
    return (
        group.members[replaced].classic is None
        and all(m.classic is not None for m in others)
        and state.config.group_consumer_migration_policy in ("downgrade", "bidirectional")
        and len(group.members) <= state.config.group_max_size
    )


def to_classic(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    group: ConsumerGroup,
    now_ms: int,
    *,
    rebalance: bool = True,
) -> Group:
    """Convert `group`, whose members all use the classic protocol now that its last KIP-848
    member was removed (or replaced by a classic static member), into a classic group (Kafka's
    `convertToClassicGroup` and `ClassicGroup.fromConsumerGroup`); then, unless the last
    KIP-848 member was replaced rather than removed, start a rebalance in it."""
    group_id = group.group_id
    staying = list(group.members.values())
    protocol = _select_protocol(staying)
    members = []
    for m in staying:
        assert m.classic is not None
        subscription = dict(m.classic.protocols)[protocol]
        target = group.target.get(m.member_id, {})
        members.append(
            MemberMetadataValue(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.classic.session_timeout_ms,
                subscription=subscription,
                assignment=encode_partitions(target, metadata, protocol_version(subscription)),
            )
        )
    generation = group.group_epoch
    for m in list(group.members.values()):
        for kind in (
            CONSUMER_SESSION,
            CONSUMER_REVOCATION,
            CONSUMER_CLASSIC_JOIN,
            CONSUMER_CLASSIC_SYNC,
        ):
            state.cancel(result, (kind, group_id, m.member_id))
        remove_member(state, result, group, m)
    write(state, result, group_id, Tombstone(RecordKind.TARGET_EPOCH, ""))
    value = GroupMetadataValue(
        CONSUMER_PROTOCOL_TYPE, generation, protocol, None, now_ms, tuple(members)
    )
    state.apply(result, GroupMetadataRecord(group_id, value))  # converts the emptied group
    state.apply(result, ConsumerGroupRecord(group_id, None))  # clears the epoch row
    classic = state.groups[group_id]
    assert isinstance(classic, Group)
    for member in classic.members.values():
        state.schedule(
            result, session_key(group_id, member.member_id), now_ms + member.session_timeout_ms
        )
    classic.generation_members = len(classic.members)
    assert classic.state is GroupState.STABLE
    if rebalance:
        prepare_rebalance(
            state, result, classic, now_ms, initial=False, trigger=Trigger.MEMBER_LEFT
        )
    return classic


def _common_protocols(members: list[ConsumerMember]) -> bool:
    """Whether the classic members share a protocol, as a classic group's members must. They
    always do (a classic member is admitted only with a protocol every classic member has);
    checked so that a conversion never starts that could not finish."""
    names = [{name for name, _ in m.classic.protocols} for m in members if m.classic]
    return len(names) == len(members) and bool(set.intersection(*names))


def _select_protocol(members: list[ConsumerMember]) -> str:
    """The classic group's protocol: among the names every member supports, each member votes
    its first; most votes wins, ties by first vote (as the classic group's `select_protocol`)."""
    lists = [[name for name, _ in m.classic.protocols] for m in members if m.classic]
    common = set(lists[0]).intersection(*lists[1:])
    if not common:
        raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "no common protocol")
    votes: dict[str, int] = {}
    for names in lists:
        choice = next(n for n in names if n in common)
        votes[choice] = votes.get(choice, 0) + 1
    return max(votes, key=lambda name: votes[name])
