"""The consumer group's records: writing one (through the core's state) and replaying one.

Every durable change goes through `write` -> `CoordinatorState.apply` -> `replay`, the same code
for live changes and for loading a partition, so a load rebuilds the same groups.
"""

from __future__ import annotations

from rebalance.consumer_group.group import ConsumerGroup, ConsumerMember, MemberState
from rebalance.consumer_group.records import (
    ConsumerGroupRecord,
    ConsumerValue,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberValue,
    RecordKind,
    TargetEpochValue,
    TargetMemberValue,
    Tombstone,
)
from rebalance.effects import Result
from rebalance.records import Record
from rebalance.state import CoordinatorState

#: The per-member keys, in the order a removed member's tombstones are written.
MEMBER_KINDS = (RecordKind.CURRENT, RecordKind.TARGET_MEMBER, RecordKind.MEMBER)


def write(state: CoordinatorState, result: Result, group_id: str, value: ConsumerValue) -> None:
    """Append `value` as a record of `group_id` and apply it to the group."""
    state.apply(result, ConsumerGroupRecord(group_id, value))


def remove_member(
    state: CoordinatorState, result: Result, group: ConsumerGroup, member: ConsumerMember
) -> None:
    """Tombstone every key `member` has: current assignment, target, subscription."""
    for kind in MEMBER_KINDS:
        write(state, result, group.group_id, Tombstone(kind, member.member_id))


def replay(group: ConsumerGroup, value: ConsumerValue) -> None:
    """Apply one record value: the same code for live changes and for loading."""
    if isinstance(value, GroupEpochValue):
        group.group_epoch = value.epoch
        group.subscribed_metadata = value.topics
    elif isinstance(value, MemberValue):
        member = group.members.get(value.member_id)
        if member is None:
            member = group.members[value.member_id] = ConsumerMember(value.member_id)
        if member.instance_id is not None and member.instance_id != value.instance_id:
            group.static_members.pop(member.instance_id, None)
        group.count_subscription(member, -1)
        member.apply_subscription(value)
        group.count_subscription(member, 1)
        if value.instance_id is not None:
            group.static_members[value.instance_id] = value.member_id
    elif isinstance(value, TargetMemberValue):
        group.target.put(value.member_id, value.partitions)
    elif isinstance(value, TargetEpochValue):
        group.target_epoch = value.epoch
    elif isinstance(value, CurrentAssignmentValue):
        member = group.members.get(value.member_id)
        if member is None:
            # The store keeps the last value per key in last-write order: a subscription
            # rewritten after the member's current assignment (a classic member rejoining
            # with new topics) is loaded after it. Its subscription record follows.
            member = group.members[value.member_id] = ConsumerMember(value.member_id)
        group.set_current(member, value)
    else:
        _replay_tombstone(group, value)


def tombstones(group: ConsumerGroup) -> list[Record]:
    """The records that delete `group` (DeleteGroups, offsets expiry): every key it has."""
    records: list[Record] = []
    for member_id in sorted(group.members):
        for kind in MEMBER_KINDS:
            records.append(ConsumerGroupRecord(group.group_id, Tombstone(kind, member_id)))
    records.append(ConsumerGroupRecord(group.group_id, Tombstone(RecordKind.TARGET_EPOCH, "")))
    records.append(ConsumerGroupRecord(group.group_id, None))
    return records


def _replay_tombstone(group: ConsumerGroup, value: Tombstone) -> None:
    member = group.members.get(value.member_id)
    if value.kind is RecordKind.CURRENT:
        if member is not None:
            group.release_all(member)
            member.assigned = {}
            member.pending_revocation = {}
            member.epochs = ()
            member.state = MemberState.STABLE
            member.member_epoch = 0
            member.previous_member_epoch = -1
    elif value.kind is RecordKind.TARGET_MEMBER:
        group.target.discard(value.member_id)
    elif value.kind is RecordKind.MEMBER:
        group.remove_member(value.member_id)
    elif value.kind is RecordKind.TARGET_EPOCH:
        group.target_epoch = 0
