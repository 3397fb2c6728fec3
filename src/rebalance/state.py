"""The coordinator's shared state and the one `replay` that changes its durable part.

`CoordinatorState` holds every loaded group (of any group type), the status of each owned
`__consumer_offsets` partition, the deadlines of armed timers, the configuration and the random
source. Handlers (`rebalance.classic`, `offsets.py`) receive it; they change the *soft* state
of a rebalance in flight (parked requests, pending ids, the formed-but-unsynced generation)
directly, as Kafka does, and the *durable* state (groups' persisted metadata and committed
offsets, the existence of a group) only by building records and passing them to `replay`.
Loading a partition replays the same records, so a reloaded coordinator rebuilds exactly the
durable state; what was in flight is lost, as in Kafka (groups come back Stable or Empty,
spec §4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from rebalance.classic.group import Group
from rebalance.client_balance.records import ClientBalanceRecord
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.records import ConsumerGroupRecord
from rebalance.effects import Cancel, Result, Schedule
from rebalance.lifecycle import GroupState
from rebalance.placement import partition_for
from rebalance.records import GroupMetadataRecord, OffsetCommitRecord, Record
from rebalance.rng import RandomSource
from rebalance.timers import TimerKey

#: Applies a group record's value (never a tombstone) to its group.
GroupReplay = Callable[[Any, Any], None]


class PartitionStatus(Enum):
    LOADING = "loading"
    ACTIVE = "active"


@dataclass(slots=True)
class OwnedPartition:
    status: PartitionStatus
    groups: set[str]


class CoordinatorState:
    __slots__ = ("config", "group_records", "groups", "partitions", "rng", "timers")

    def __init__(self, config: CoordinatorConfig, rng: RandomSource) -> None:
        self.config = config
        self.rng = rng
        #: Every loaded group by id, of any group type (`group.group_type` names it); DOWN
        #: groups are never here (they leave in the same step). Typed Any: each group type's
        #: handlers know their own class, and the core reaches a group only through its type.
        self.groups: dict[str, Any] = {}
        self.partitions: dict[int, OwnedPartition] = {}
        #: Armed timers and their deadlines: the core's own view, used to drop stale firings.
        self.timers: dict[TimerKey, int] = {}
        #: Group record class -> (the group class it creates, how its value is applied); each
        #: group type registers its own (`GroupCoordinatorCore.__init__`).
        self.group_records: dict[type[Any], tuple[type[Any], GroupReplay]] = {}

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

    def apply_offsets(
        self, result: Result, group_id: str, records: list[OffsetCommitRecord]
    ) -> None:
        """`apply` of one commit's offset records (all of `group_id`, none a tombstone): the
        same records emitted and the same replay, the group looked up once."""
        if not records:
            return
        result.records.extend(records)
        group = self.groups.get(group_id)
        if group is None:  # a "simple" group: offsets only, no members ever
            group = self._materialise(group_id)
        offsets = group.offsets
        for record in records:
            value = record.value
            assert value is not None
            offsets[record.topic, record.partition] = value

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

    def _replay_group(
        self, record: GroupMetadataRecord | ConsumerGroupRecord | ClientBalanceRecord
    ) -> None:
        group_class, apply_value = self.group_records[type(record)]
        group = self.groups.get(record.group_id)
        if record.value is None:
            # A group's tombstone deletes only a group of its own type: when an empty group
            # changes type, the new type's records come first and the old type's tombstone
            # then only clears the old row from the store.
            if group is not None and isinstance(group, group_class):
                self._drop(group)
            return
        if group is None:
            group = self._materialise(record.group_id, group_class)
        elif not isinstance(group, group_class):
            group = self._convert(group, group_class)
        apply_value(group, record.value)

    def _materialise(self, group_id: str, group_class: type[Any] = Group) -> Group:
        """Create a group named by a record: DOWN -> INITIALIZE, and on to STABLE when its
        partition is live (a loading partition finishes all its groups at once). A group
        created by an offset record alone (Kafka's "simple" group) is a classic group."""
        partition = self.partition_of(group_id)
        owned = self.partitions.get(partition)
        if owned is None:
            raise ValueError(f"record for group {group_id!r}: partition {partition} is not owned")
        group: Group = group_class(group_id, partition)
        group.transition("load", None)
        owned.groups.add(group_id)
        if owned.status is PartitionStatus.ACTIVE:
            group.transition("loaded", None)
        self.groups[group_id] = group
        return group

    def _convert(self, group: Any, group_class: type[Any]) -> Any:
        """A group becomes a group of another type (Kafka converts an empty classic group to a
        consumer group on a consumer heartbeat, and back on a JoinGroup; and one with members
        online, `rebalance.consumer_group.migration`); its committed offsets stay with the id,
        its members are the new type's records that follow."""
        converted = group_class(group.group_id, group.partition)
        # Loading or live: a classic group mid-rebalance is live (the new type starts STABLE).
        converted.state = (
            group.state
            if group.state in (GroupState.DOWN, GroupState.INITIALIZE)
            else GroupState.STABLE
        )
        converted.offsets = group.offsets
        self.groups[group.group_id] = converted
        return converted

    def _drop(self, group: Any) -> None:
        group.transition("unload" if group.state is GroupState.INITIALIZE else "delete", None)
        del self.groups[group.group_id]
        owned = self.partitions.get(group.partition)
        if owned is not None:
            owned.groups.discard(group.group_id)
