"""The coordinator's shared state and the one `replay` that changes its durable part.

`CoordinatorState` holds every loaded group, the status of each owned `__consumer_offsets`
partition, the deadlines of armed timers, the configuration and the random source. Handlers in
`membership.py` and `offsets.py` receive it; they change the *soft* state of a rebalance in
flight (parked requests, pending ids, the formed-but-unsynced generation) directly, as Kafka
does, and the *durable* state (groups' persisted metadata and committed offsets, the existence of
a group) only by building records and passing them to `replay`. Loading a partition replays the
same records, so a reloaded coordinator rebuilds exactly the durable state; what was in flight
is lost, as in Kafka (groups come back Stable or Empty, spec §4).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from rebalance.config import CoordinatorConfig
from rebalance.group import Group, Member
from rebalance.lifecycle import GroupState, fire
from rebalance.placement import partition_for
from rebalance.records import (
    Cancel,
    GroupMetadataRecord,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitRecord,
    Record,
    Result,
    Schedule,
    TimerKey,
)
from rebalance.rng import RandomSource


class PartitionStatus(Enum):
    LOADING = "loading"
    ACTIVE = "active"


@dataclass(slots=True)
class OwnedPartition:
    status: PartitionStatus
    groups: set[str]


class CoordinatorState:
    __slots__ = ("config", "groups", "partitions", "rng", "timers")

    def __init__(self, config: CoordinatorConfig, rng: RandomSource) -> None:
        self.config = config
        self.rng = rng
        self.groups: dict[str, Group] = {}
        self.partitions: dict[int, OwnedPartition] = {}
        #: Armed timers and their deadlines: the core's own view, used to drop stale firings.
        self.timers: dict[TimerKey, int] = {}

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    # -- timers --------------------------------------------------------------------------
    def schedule(self, result: Result, key: TimerKey, deadline_ms: int) -> None:
        self.timers[key] = deadline_ms
        result.timers.append(Schedule(key, deadline_ms))

    def cancel(self, result: Result, key: TimerKey) -> None:
        if self.timers.pop(key, None) is not None:
            result.timers.append(Cancel(key))

    # -- the durable state changes only here ----------------------------------------------
    def apply(self, result: Result, record: Record) -> None:
        """Emit `record` as part of `result` and replay it."""
        result.records.append(record)
        self.replay(record)

    def replay(self, record: Record) -> None:
        """Apply one record: used for live handler output and for loading a partition."""
        if isinstance(record, OffsetCommitRecord):
            self._replay_offset(record)
        else:
            self._replay_group(record)

    def _replay_offset(self, record: OffsetCommitRecord) -> None:
        group = self.groups.get(record.group_id)
        tp = (record.topic, record.partition)
        if record.value is None:
            if group is not None:
                group.offsets.pop(tp, None)
            return
        if group is None:  # a "simple" group: offsets only, no members ever
            group = self._materialise(record.group_id)
        group.offsets[tp] = record.value

    def _replay_group(self, record: GroupMetadataRecord) -> None:
        group = self.groups.get(record.group_id)
        value = record.value
        if value is None:
            if group is not None:
                self._drop(group)
            return
        if group is None:
            group = self._materialise(record.group_id)
        if group.state is GroupState.INITIALIZE:
            # Loading: the newest snapshot replaces whatever an older one said.
            self._restore_members(group, value)
        else:
            # Live: the handler built this snapshot from the group itself; what only the
            # record carries is each member's new assignment.
            for m in value.members:
                member = group.members.get(m.member_id)
                if member is not None:
                    member.assignment = m.assignment
        group.protocol_type = value.protocol_type
        group.generation = value.generation
        group.protocol_name = value.protocol_name
        group.leader_id = value.leader_id
        group.current_state_timestamp_ms = value.current_state_timestamp_ms

    @staticmethod
    def _restore_members(group: Group, value: GroupMetadataValue) -> None:
        group.members = {}
        group.static_members = {}
        group.supported_protocols = {}
        group.num_awaiting_join = 0
        group.leader_id = None
        group.generation_members = len(value.members)
        for m in value.members:
            group.add_member(
                Member(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    protocol_type=value.protocol_type or "",
                    protocols=((value.protocol_name or "", m.subscription),),
                    assignment=m.assignment,
                )
            )

    def _materialise(self, group_id: str) -> Group:
        """Create a group named by a record: DOWN -> INITIALIZE, and on to STABLE when its
        partition is live (a loading partition finishes all its groups at once)."""
        partition = self.partition_of(group_id)
        owned = self.partitions.get(partition)
        if owned is None:
            raise ValueError(f"record for group {group_id!r}: partition {partition} is not owned")
        group = Group(group_id, partition)
        fire(group, "load")
        owned.groups.add(group_id)
        if owned.status is PartitionStatus.ACTIVE:
            fire(group, "loaded")
        self.groups[group_id] = group
        return group

    def _drop(self, group: Group) -> None:
        fire(group, "unload" if group.state is GroupState.INITIALIZE else "delete")
        del self.groups[group.group_id]
        owned = self.partitions.get(group.partition)
        if owned is not None:
            owned.groups.discard(group.group_id)


def metadata_value(group: Group, assignments: dict[str, bytes] | None = None) -> GroupMetadataValue:
    """The group as it is persisted: members with the selected protocol's metadata.

    `assignments`, when given, replaces every member's assignment (missing members: empty).
    """
    protocol = group.protocol_name
    return GroupMetadataValue(
        protocol_type=group.protocol_type,
        generation=group.generation,
        protocol_name=protocol,
        leader_id=group.leader_id,
        current_state_timestamp_ms=group.current_state_timestamp_ms,
        members=tuple(
            MemberMetadataValue(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata_for(protocol) if protocol is not None else b"",
                m.assignment if assignments is None else assignments.get(m.member_id, b""),
            )
            for m in group.members.values()
        ),
    )
