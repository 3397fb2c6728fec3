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

from dataclasses import dataclass
from enum import Enum
from typing import Any

from rebalance.config import CoordinatorConfig
from rebalance.effects import Cancel, Result, Schedule
from rebalance.errors import ErrorCode
from rebalance.group_types import GroupRoute, GroupType
from rebalance.lifecycle import GroupState
from rebalance.placement import partition_for
from rebalance.records import OffsetCommitRecord, Record
from rebalance.rng import RandomSource
from rebalance.timers import TimerKey


class PartitionStatus(Enum):
    LOADING = "loading"
    ACTIVE = "active"


@dataclass(slots=True)
class OwnedPartition:
    status: PartitionStatus
    groups: set[str]


class CoordinatorState:
    __slots__ = (
        "config",
        "foreign_routes",
        "group_types",
        "groups",
        "partitions",
        "rng",
        "simple_group_type",
        "timers",
        "types_by_record",
        "types_by_timer",
    )

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
        #: The group types held, by name (`register`); each group names its own.
        self.group_types: dict[str, GroupType] = {}
        #: Each type's record class and timer kinds -> the type.
        self.types_by_record: dict[type[Any], GroupType] = {}
        self.types_by_timer: dict[str, GroupType] = {}
        #: (group type name, command class) -> how that type answers another type's command
        #: naming one of its groups (`GroupType.foreign_routes`).
        self.foreign_routes: dict[tuple[str, type[Any]], GroupRoute] = {}
        #: The type of a group an offset record creates alone (Kafka's "simple" group): the
        #: first registered (the classic type).
        self.simple_group_type: GroupType | None = None

    def register(self, group_type: GroupType) -> None:
        """Hold `group_type`'s groups: its records replay, its timers fire to it."""
        if group_type.name in self.group_types:
            raise ValueError(f"group type {group_type.name!r} registered twice")
        if group_type.record_class in self.types_by_record:
            raise ValueError(f"record class {group_type.record_class.__name__} registered twice")
        self.group_types[group_type.name] = group_type
        self.types_by_record[group_type.record_class] = group_type
        for kind in group_type.timer_kinds:
            if kind in self.types_by_timer:
                raise ValueError(f"timer kind {kind!r} registered twice")
            self.types_by_timer[kind] = group_type
        for command, route in group_type.foreign_routes().items():
            self.foreign_routes[group_type.name, command] = route
        if self.simple_group_type is None:
            self.simple_group_type = group_type

    def type_of(self, group: Any) -> GroupType:
        return self.group_types[group.group_type]

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def availability(self, group_id: str) -> ErrorCode:
        """NOT_COORDINATOR unless this coordinator owns the group's partition;
        COORDINATOR_LOAD_IN_PROGRESS while it loads; else NONE."""
        group = self.groups.get(group_id)
        partition = group.partition if group is not None else self.partition_of(group_id)
        owned = self.partitions.get(partition)
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        if owned.status is PartitionStatus.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

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

    def _replay_group(self, record: Record) -> None:
        group_type = self.types_by_record[type(record)]
        group_class = group_type.group_class
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
        group_type.replay(group, record.value)

    def _materialise(self, group_id: str, group_class: type[Any] | None = None) -> Any:
        """Create a group named by a record: DOWN -> INITIALIZE, and on to STABLE when its
        partition is live (a loading partition finishes all its groups at once). A group
        created by an offset record alone (Kafka's "simple" group) is of the simple group
        type (classic)."""
        if group_class is None:
            assert self.simple_group_type is not None, "no group type registered"
            group_class = self.simple_group_type.group_class
        partition = self.partition_of(group_id)
        owned = self.partitions.get(partition)
        if owned is None:
            raise ValueError(f"record for group {group_id!r}: partition {partition} is not owned")
        group = group_class(group_id, partition)
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
