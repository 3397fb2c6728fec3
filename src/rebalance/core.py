"""`GroupCoordinatorCore`: the sans-I/O group coordinator over `__consumer_offsets` partitions.

The core is synchronous and deterministic. Every entry point takes a command, the current time
in milliseconds and a reply token, and returns a `Result` (records to persist, replies, timer
effects). It never reads a clock, never sleeps, never does I/O, and draws randomness only from
the injected `RandomSource`; the same inputs always give the same outputs.

The core knows no group type by name: it holds the types `rebalance.registry` lists (or the
ones it is given), and each type brings its routes into the one dispatch table
(`GroupType.routes`), its records into replay and its timer kinds into `on_timer`. The core
answers the APIs every type shares: offsets (`rebalance.offsets`, asking the group's type who
may commit and fetch), DescribeGroups, ListGroups and DeleteGroups.

Coordinator-level rules applied before a group is touched (spec §1.6, §4), by every route:

* a request for a group whose partition this coordinator does not own -> NOT_COORDINATOR;
* while that partition loads -> COORDINATOR_LOAD_IN_PROGRESS (Heartbeat: NONE, as Kafka does);
* empty group ids -> INVALID_GROUP_ID for the membership APIs and OffsetDelete (commit, fetch,
  describe and delete-groups accept ""); a type's own checks come first where Kafka's do
  (JoinGroup's session timeout, `rebalance.classic.routes`).

Partition lifecycle: `begin_load(p)` marks a partition loading; the shell streams its stored
records through `replay`; `complete_load(p, now_ms)` makes its groups live (members' sessions
armed from load time; groups over group.max.size rebalance at once). `unload(p)` drops every
group of the partition, answering its parked requests with NOT_COORDINATOR.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from rebalance.commands import (
    Command,
    DeleteGroups,
    DescribeGroups,
    ListGroups,
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
)
from rebalance.config import CoordinatorConfig
from rebalance.effects import Offload, Result, single_reply
from rebalance.errors import ErrorCode
from rebalance.event_schema import DeleteReason, EventType
from rebalance.group_types import GroupType, Route
from rebalance.offsets import Offsets
from rebalance.records import OffsetCommitRecord, Record
from rebalance.registry import GROUP_TYPES, GroupTypeFactory
from rebalance.replies import (
    DeleteGroupsReply,
    DescribedGroup,
    DescribeGroupsReply,
    ListGroupsReply,
)
from rebalance.rng import RandomSource, SplitMix64
from rebalance.state import CoordinatorState, OwnedPartition, PartitionStatus
from rebalance.timers import RETENTION, TimerKey, retention_key
from rebalance.topics import TopicMetadata


class GroupCoordinatorCore:
    """Kafka's classic group coordinator, pure. See the module docstring for the contract."""

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        rng: RandomSource | None = None,
        group_types: Sequence[GroupTypeFactory] = GROUP_TYPES,
    ) -> None:
        self.state = CoordinatorState(config or CoordinatorConfig(), rng or SplitMix64(0))
        self._offsets = Offsets(self.state)
        #: The one dispatch table: command type -> handler; the shared APIs here, each group
        #: type's own from its `routes()`.
        self._routes: dict[type[Command[Any]], Route] = {
            OffsetCommit: self.offset_commit,
            OffsetFetch: self.offset_fetch,
            OffsetDelete: self.offset_delete,
            DescribeGroups: self.describe_groups,
            ListGroups: self.list_groups,
            DeleteGroups: self.delete_groups,
        }
        for factory in group_types:
            group_type = factory(self.state)
            self.state.register(group_type)
            for command, route in group_type.routes().items():
                if command in self._routes:
                    raise ValueError(f"{command.__name__} routed twice ({group_type.name})")
                self._routes[command] = route

    @property
    def group_types(self) -> dict[str, GroupType]:
        """The group types this core holds, by name; each group names its own."""
        return self.state.group_types

    def _type_of(self, group: Any) -> GroupType:
        return self.state.group_types[group.group_type]

    @property
    def config(self) -> CoordinatorConfig:
        return self.state.config

    # ======================================================================= partitions
    def partition_for(self, group_id: str) -> int:
        return self.state.partition_of(group_id)

    def begin_load(self, partition: int) -> None:
        """Start owning `partition`: its groups are INITIALIZE until `complete_load`."""
        self._check_partition_number(partition)
        if partition in self.state.partitions:
            raise ValueError(f"partition {partition} is already owned")
        self.state.partitions[partition] = OwnedPartition(PartitionStatus.LOADING, set())

    def replay(self, record: Record) -> None:
        """Apply a stored record (while loading) — the same replay the live path uses."""
        self.state.replay(record)

    def complete_load(self, partition: int, now_ms: int) -> Result:
        owned = self.state.partitions.get(partition)
        if owned is None or owned.status is not PartitionStatus.LOADING:
            raise ValueError(f"partition {partition} is not loading")
        owned.status = PartitionStatus.ACTIVE
        result = Result()
        for group_id in sorted(owned.groups):
            group = self.state.groups[group_id]
            group.transition("loaded", None)
            self._type_of(group).loaded(result, group, now_ms)
        self.state.schedule(
            result,
            retention_key(partition),
            now_ms + self.state.config.offsets_retention_check_interval_ms,
        )
        result.event(
            EventType.PARTITION_LOADED, now_ms, None, partition=partition, groups=len(owned.groups)
        )
        return result

    def load(self, partition: int, records: Iterable[Record], now_ms: int) -> Result:
        """`begin_load`, replay every record, `complete_load`: DOWN -> INITIALIZE -> STABLE."""
        self.begin_load(partition)
        for record in records:
            self.state.replay(record)
        return self.complete_load(partition, now_ms)

    def unload(self, partition: int, now_ms: int) -> Result:
        """Stop owning `partition`: its groups go DOWN; parked requests get NOT_COORDINATOR."""
        owned = self.state.partitions.pop(partition, None)
        result = Result()
        if owned is None:
            return result
        result.event(
            EventType.PARTITION_UNLOADED,
            now_ms,
            None,
            partition=partition,
            groups=len(owned.groups),
        )
        for group_id in sorted(owned.groups):
            group = self.state.groups.pop(group_id)
            self._type_of(group).unloaded(result, group)
            group.transition("unload", None)
        for key in [k for k in self.state.timers if self._timer_partition(k) == partition]:
            self.state.cancel(result, key)
        return result

    def _check_partition_number(self, partition: int) -> None:
        n = self.state.config.offsets_topic_num_partitions
        if not 0 <= partition < n:
            raise ValueError(f"partition {partition} outside 0..{n - 1}")

    def _timer_partition(self, key: TimerKey) -> int:
        if key[0] == RETENTION:
            return int(key[2])
        return self.state.partition_of(key[1])

    # ========================================================================= dispatch
    def handle(self, command: Command[Any], now_ms: int, token: Hashable) -> Result:
        """Route any command to its handler (the dispatch table in `__init__`)."""
        route = self._routes.get(type(command))
        if route is None:
            raise TypeError(f"no handler for {type(command).__name__}")
        return route(command, now_ms, token)

    # ==================================================================== shared APIs
    def offset_commit(self, cmd: OffsetCommit, now_ms: int, token: Hashable) -> Result:
        error = self.state.availability(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._offsets.commit(cmd, now_ms, token)

    def offset_fetch(self, cmd: OffsetFetch, now_ms: int, token: Hashable) -> Result:
        error = self.state.availability(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._offsets.fetch(cmd, token)

    def offset_delete(self, cmd: OffsetDelete, now_ms: int, token: Hashable) -> Result:
        # Kafka accepts "" for commits and fetches (backwards compatibility), not here.
        error = (
            self.state.availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        )
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._offsets.delete(cmd, token)

    def describe_groups(self, cmd: DescribeGroups, now_ms: int, token: Hashable) -> Result:
        return single_reply(
            token, DescribeGroupsReply(tuple(self._describe(g) for g in cmd.group_ids))
        )

    def _describe(self, group_id: str) -> DescribedGroup:
        error = self.state.availability(group_id)
        if error is not ErrorCode.NONE:
            return DescribedGroup(group_id, error)
        group = self.state.groups.get(group_id)
        if group is None:
            return DescribedGroup(group_id, ErrorCode.NONE, state="Dead")
        return self._type_of(group).describe(group)

    def list_groups(self, cmd: ListGroups, now_ms: int, token: Hashable) -> Result:
        if any(o.status is PartitionStatus.LOADING for o in self.state.partitions.values()):
            # Kafka's new coordinator: the error and an empty list while anything loads.
            return single_reply(token, ListGroupsReply(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
        states = {s.strip().lower() for s in cmd.states_filter}
        types = {t.strip().lower() for t in cmd.types_filter}
        listed = []
        for group_id in sorted(self.state.groups):
            group = self.state.groups[group_id]
            entry = self._type_of(group).listed(group)
            if states and entry.state.lower() not in states:
                continue
            if types and entry.group_type not in types:
                continue
            listed.append(entry)
        return single_reply(token, ListGroupsReply(ErrorCode.NONE, tuple(listed)))

    def delete_groups(self, cmd: DeleteGroups, now_ms: int, token: Hashable) -> Result:
        result = Result()
        outcomes = []
        for group_id in cmd.group_ids:
            error = self.state.availability(group_id)
            group = self.state.groups.get(group_id)
            if error is ErrorCode.NONE:
                if group is None:
                    error = ErrorCode.GROUP_ID_NOT_FOUND
                else:
                    error = self._type_of(group).deletable(group)
            if error is ErrorCode.NONE and group is not None:
                for topic, partition in sorted(group.offsets):
                    self.state.apply(result, OffsetCommitRecord(group_id, topic, partition, None))
                for record in self._type_of(group).tombstones(group):
                    self.state.apply(result, record)
                result.event(
                    EventType.GROUP_DELETED, now_ms, group_id, reason=DeleteReason.DELETE_GROUPS
                )
            outcomes.append((group_id, error))
        result.reply(token, DeleteGroupsReply(tuple(outcomes)))
        return result

    # =========================================================================== timers
    def on_timer(self, key: TimerKey, now_ms: int) -> Result:
        """A timer the shell armed for `key` fired. Stale or cancelled firings do nothing."""
        deadline = self.state.timers.get(key)
        if deadline is None or deadline > now_ms:
            return Result()
        del self.state.timers[key]
        kind, group_id, partition = key
        if kind == RETENTION:
            return self._expire_offsets(int(partition), now_ms)
        group_type = self.state.types_by_timer.get(kind)
        if group_type is None:
            raise ValueError(f"unknown timer kind {kind!r}")
        group = self.state.groups.get(group_id)
        if group is None or group.group_type != group_type.name:
            return Result()
        return group_type.on_timer(key, group, now_ms)

    # =================================================================== topic metadata
    def topics_changed(self, metadata: TopicMetadata, now_ms: int) -> Result:
        """The shell's snapshot of the cluster's topics, sent at start and whenever a topic is
        created, grows or is deleted. Consumer groups assign on the server, so the core must
        know the topics; a snapshot pushed on change (rather than one per request) keeps
        heartbeats small and makes every epoch bump a recorded, replayable decision."""
        result = Result()
        for group_type in self.state.group_types.values():
            result.extend(group_type.topics_changed(metadata, now_ms))
        return result

    def target_computed(self, inputs: Offload, computed: Any, now_ms: int) -> Result:
        """Work the shell computed off the loop (`Result.offloaded`: a consumer group's
        target assignment); `computed` None if it failed. Its group's type applies it (a
        consumer group's target only if its group epoch is still current)."""
        group = self.state.groups.get(inputs.group_id)
        if group is None:
            return Result()  # deleted meanwhile
        return self._type_of(group).target_computed(group, inputs, computed, now_ms)

    def offloaded_inputs(self) -> list[Offload]:
        """The work every group would offload next (`Result.offloaded`: the target inputs of
        every consumer group whose next target would be offloaded), as it is now: what the
        shell's worker can be sent ahead of that computation (the runtime primes it once the
        node has loaded)."""
        return [
            inputs
            for group_type in self.state.group_types.values()
            for inputs in group_type.offloaded_inputs()
        ]

    # =================================================================== deleted topics
    def topics_deleted(self, topics: Iterable[str], now_ms: int) -> Result:
        """Remove every group's committed offsets of `topics`, which were deleted: records
        only, no replies (Kafka's `GroupCoordinator.onPartitionsDeleted`)."""
        deleted = frozenset(topics)
        result = Result()
        for group_id in sorted(self.state.groups):
            result.extend(self._offsets.forget_topics(self.state.groups[group_id], deleted))
        return result

    def _expire_offsets(self, partition: int, now_ms: int) -> Result:
        result = Result()
        owned = self.state.partitions.get(partition)
        if owned is None or owned.status is not PartitionStatus.ACTIVE:
            return result
        for group_id in sorted(owned.groups):
            group = self.state.groups.get(group_id)
            if group is not None:
                result.extend(self._offsets.expire(group, now_ms, self._type_of(group).tombstones))
        self.state.schedule(
            result,
            retention_key(partition),
            now_ms + self.state.config.offsets_retention_check_interval_ms,
        )
        return result

    # =========================================================================== views
    def group(self, group_id: str) -> Any | None:
        return self.state.groups.get(group_id)

    def groups(self) -> dict[str, Any]:
        return self.state.groups

    def armed_timers(self) -> dict[TimerKey, int]:
        return dict(self.state.timers)
