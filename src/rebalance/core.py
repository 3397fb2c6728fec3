"""`GroupCoordinatorCore`: the sans-I/O group coordinator over `__consumer_offsets` partitions.

The core is synchronous and deterministic. Every entry point takes a command, the current time
in milliseconds and a reply token, and returns a `Result` (records to persist, replies, timer
effects). It never reads a clock, never sleeps, never does I/O, and draws randomness only from
the injected `RandomSource`; the same inputs always give the same outputs.

Coordinator-level rules applied before a group is touched (spec §1.6, §4):

* a request for a group whose partition this coordinator does not own -> NOT_COORDINATOR;
* while that partition loads -> COORDINATOR_LOAD_IN_PROGRESS (Heartbeat: NONE, as Kafka does);
* JoinGroup's session timeout outside [group.min, group.max] -> INVALID_SESSION_TIMEOUT
  (checked first, as Kafka's new coordinator does); empty group ids -> INVALID_GROUP_ID for the
  membership APIs and OffsetDelete (commit, fetch, describe and delete-groups accept "").

Partition lifecycle: `begin_load(p)` marks a partition loading; the shell streams its stored
records through `replay`; `complete_load(p, now_ms)` makes its groups live (members' sessions
armed from load time; groups over group.max.size rebalance at once). `unload(p)` drops every
group of the partition, answering its parked requests with NOT_COORDINATOR.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace
from typing import Any

from rebalance.classic import ClassicGroupType
from rebalance.classic.group import Group
from rebalance.client_balance.commands import (
    ClientBalanceDescribe,
    ClientBalanceHeartbeat,
    RegisterPartitions,
    ReleasePartitions,
)
from rebalance.client_balance.group_type import ClientBalanceGroupType
from rebalance.commands import (
    Command,
    DeleteGroups,
    DescribeGroups,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
    SyncGroup,
)
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.commands import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from rebalance.consumer_group.group import ConsumerGroup, TopicMetadata
from rebalance.consumer_group.group_type import ConsumerGroupType
from rebalance.consumer_group.target import ComputedTarget, TargetInputs
from rebalance.effects import Result, single_reply
from rebalance.errors import ErrorCode
from rebalance.event_schema import DeleteReason, EventType
from rebalance.group_types import GroupType
from rebalance.offsets import Offsets
from rebalance.records import OffsetCommitRecord, Record
from rebalance.replies import (
    ClientBalanceDescribeReply,
    ConsumerGroupDescribeReply,
    ConsumerGroupHeartbeatReply,
    DeleteGroupsReply,
    DescribedConsumerGroup,
    DescribedGroup,
    DescribeGroupsReply,
    HeartbeatReply,
    ListGroupsReply,
)
from rebalance.rng import RandomSource, SplitMix64
from rebalance.state import CoordinatorState, OwnedPartition, PartitionStatus
from rebalance.timers import RETENTION, TimerKey, retention_key

_Route = Callable[[Any, int, Hashable], Result]

#: (An alias: read on every JoinGroup, SyncGroup and Heartbeat, and on Python 3.11 an enum
#: member costs a class `__getattr__` hook, four times a module global's lookup.)
_ACTIVE = PartitionStatus.ACTIVE


class GroupCoordinatorCore:
    """Kafka's classic group coordinator, pure. See the module docstring for the contract."""

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        self.state = CoordinatorState(config or CoordinatorConfig(), rng or SplitMix64(0))
        self._classic = ClassicGroupType(self.state)
        #: The group types this core holds, by name; each group names its own.
        self.group_types: dict[str, GroupType] = {}
        self._types_by_timer: dict[str, GroupType] = {}
        self._consumer = ConsumerGroupType(self.state)
        self._add_group_type(self._classic)
        self._add_group_type(self._consumer)
        self._client_balance = ClientBalanceGroupType(
            self.state, lambda group: self._type_of(group).tombstones(group)
        )
        self._add_group_type(self._client_balance)
        self._offsets = Offsets(self.state)
        #: The one dispatch table: command type -> handler.
        self._routes: dict[type[Command[Any]], _Route] = {
            JoinGroup: self.join_group,
            SyncGroup: self.sync_group,
            Heartbeat: self.heartbeat,
            LeaveGroup: self.leave_group,
            OffsetCommit: self.offset_commit,
            OffsetFetch: self.offset_fetch,
            OffsetDelete: self.offset_delete,
            DescribeGroups: self.describe_groups,
            ListGroups: self.list_groups,
            DeleteGroups: self.delete_groups,
            ConsumerGroupHeartbeat: self.consumer_group_heartbeat,
            ConsumerGroupDescribe: self.consumer_group_describe,
            ClientBalanceHeartbeat: self.client_balance_heartbeat,
            RegisterPartitions: self.register_partitions,
            ReleasePartitions: self.release_partitions,
            ClientBalanceDescribe: self.client_balance_describe,
        }

    def _add_group_type(self, group_type: GroupType) -> None:
        self.group_types[group_type.name] = group_type
        self.state.group_records[group_type.record_class] = (
            group_type.group_class,
            group_type.replay,
        )
        for kind in group_type.timer_kinds:
            self._types_by_timer[kind] = group_type

    def _type_of(self, group: Any) -> GroupType:
        return self.group_types[group.group_type]

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

    def _availability(self, group_id: str) -> ErrorCode:
        group = self.state.groups.get(group_id)
        partition = group.partition if group is not None else self.state.partition_of(group_id)
        owned = self.state.partitions.get(partition)
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        if owned.status is PartitionStatus.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def _live_classic(self, group_id: str) -> bool:
        """Whether `group_id` is a loaded classic group on a live partition: what nearly every
        classic request finds, and then `_availability`, `_not_classic` and `_consumer_group`
        all pass (one lookup instead of their three, on every JoinGroup, SyncGroup and
        Heartbeat)."""
        group = self.state.groups.get(group_id)
        if group.__class__ is not Group:
            return False
        owned = self.state.partitions.get(group.partition)
        return owned is not None and owned.status is _ACTIVE

    # ========================================================================= dispatch
    def handle(self, command: Command[Any], now_ms: int, token: Hashable) -> Result:
        """Route any command to its handler (the dispatch table in `__init__`)."""
        route = self._routes.get(type(command))
        if route is None:
            raise TypeError(f"no handler for {type(command).__name__}")
        return route(command, now_ms, token)

    # ===================================================================== group APIs
    def _not_classic(self, group_id: str) -> ErrorCode:
        """GROUP_ID_NOT_FOUND for a classic request to a client-balance group (a group of
        another type). Consumer groups answer classic requests themselves
        (`rebalance.consumer_group.classic_requests`)."""
        group = self.state.groups.get(group_id)
        if group is not None and group.group_type == self._client_balance.name:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return ErrorCode.NONE

    def _consumer_group(self, group_id: str) -> ConsumerGroup | None:
        group = self.state.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def consumer_group_heartbeat(
        self, cmd: ConsumerGroupHeartbeat, now_ms: int, token: Hashable
    ) -> Result:
        # An empty group id is the type's INVALID_REQUEST (Kafka validates before routing).
        error = self._availability(cmd.group_id) if cmd.group_id.strip() else ErrorCode.NONE
        if error is ErrorCode.NONE:
            group = self.state.groups.get(cmd.group_id)
            if group is not None and group.group_type == self._client_balance.name:
                # Kafka's answer to a group of another type; an empty client-balance group is
                # not converted (its epoch row would outlive the conversion in the store).
                return single_reply(
                    token,
                    ConsumerGroupHeartbeatReply(
                        ErrorCode.GROUP_ID_NOT_FOUND,
                        f"Group {cmd.group_id} is not a consumer group.",
                        member_id=cmd.member_id or None,
                    ),
                )
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._consumer.heartbeat(cmd, now_ms, token)

    # ============================================================= client-balance groups
    def client_balance_heartbeat(
        self, cmd: ClientBalanceHeartbeat, now_ms: int, token: Hashable
    ) -> Result:
        error = self._availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._client_balance.heartbeat(cmd, now_ms, token)

    def register_partitions(self, cmd: RegisterPartitions, now_ms: int, token: Hashable) -> Result:
        error = self._availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._client_balance.register(cmd, now_ms, token)

    def release_partitions(self, cmd: ReleasePartitions, now_ms: int, token: Hashable) -> Result:
        error = self._availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._client_balance.release(cmd, now_ms, token)

    def client_balance_describe(
        self, cmd: ClientBalanceDescribe, now_ms: int, token: Hashable
    ) -> Result:
        described = self._client_balance.describe_client_balance(cmd)
        groups = []
        for described_group in described.groups:
            error = self._availability(described_group.group_id)
            if error is not ErrorCode.NONE:
                described_group = replace(described_group, error=error)
            groups.append(described_group)
        return single_reply(token, ClientBalanceDescribeReply(tuple(groups)))

    def join_group(self, cmd: JoinGroup, now_ms: int, token: Hashable) -> Result:
        cfg = self.state.config
        error = ErrorCode.NONE
        if not cmd.group_id:
            error = ErrorCode.INVALID_GROUP_ID
        elif not (
            cfg.group_min_session_timeout_ms
            <= cmd.session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        elif self._live_classic(cmd.group_id):
            return self._classic.join(cmd, now_ms, token)
        else:
            error = self._availability(cmd.group_id)
        if error is ErrorCode.NONE:
            error = self._not_classic(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        consumer = self._consumer_group(cmd.group_id)
        if consumer is not None:
            if consumer.members:
                return self._consumer.classic_join(consumer, cmd, now_ms, token)
            if cmd.member_id:
                # A known member id and no classic group: the classic answer, nothing converted.
                # DIFFERS: Kafka also drops the empty consumer group from memory on this path
                # (`maybeDeleteEmptyConsumerGroup` runs before the member check) without writing
                # its tombstones, so it reappears on the next load; here it stays as it is.
                return single_reply(token, cmd.error_reply(ErrorCode.UNKNOWN_MEMBER_ID))
            result = Result()
            self._consumer.to_classic(result, consumer, now_ms)
            result.extend(self._classic.join(cmd, now_ms, token))
            return result
        return self._classic.join(cmd, now_ms, token)

    def sync_group(self, cmd: SyncGroup, now_ms: int, token: Hashable) -> Result:
        if not cmd.group_id:
            error = ErrorCode.INVALID_GROUP_ID
        elif cmd.version >= 5 and (cmd.protocol_type is None or cmd.protocol_name is None):
            # Mandatory from v5; rejected before the coordinator is consulted (spec §1.8).
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        elif self._live_classic(cmd.group_id):
            return self._classic.sync(cmd, now_ms, token)
        else:
            error = self._availability(cmd.group_id)
        if error is ErrorCode.NONE:
            error = self._not_classic(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        if consumer := self._consumer_group(cmd.group_id):
            return self._consumer.classic_sync(consumer, cmd, now_ms, token)
        return self._classic.sync(cmd, now_ms, token)

    def heartbeat(self, cmd: Heartbeat, now_ms: int, token: Hashable) -> Result:
        if cmd.group_id and self._live_classic(cmd.group_id):
            return self._classic.heartbeat(cmd, now_ms, token)
        error = self._availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # Both Kafka coordinators answer blindly OK while loading.
            return single_reply(token, HeartbeatReply(ErrorCode.NONE))
        if error is ErrorCode.NONE:
            error = self._not_classic(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        if consumer := self._consumer_group(cmd.group_id):
            return self._consumer.classic_heartbeat(consumer, cmd, now_ms, token)
        return self._classic.heartbeat(cmd, now_ms, token)

    def leave_group(self, cmd: LeaveGroup, now_ms: int, token: Hashable) -> Result:
        error = self._availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        if error is ErrorCode.NONE:
            error = self._not_classic(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        consumer = self._consumer_group(cmd.group_id)
        if consumer is not None:
            return self._consumer.classic_leave(consumer, cmd, now_ms, token)
        return self._classic.leave(cmd, now_ms, token)

    def offset_commit(self, cmd: OffsetCommit, now_ms: int, token: Hashable) -> Result:
        error = self._availability(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        group = self.state.groups.get(cmd.group_id)
        if group is not None and group.group_type == self._client_balance.name:
            # A holder whose session deadline has passed commits nothing, fired or not.
            result = Result()
            self._client_balance.expire_stale(result, group, now_ms)
            result.extend(self._offsets.commit(cmd, now_ms, token))
            return result
        return self._offsets.commit(cmd, now_ms, token)

    def offset_fetch(self, cmd: OffsetFetch, now_ms: int, token: Hashable) -> Result:
        error = self._availability(cmd.group_id)
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._offsets.fetch(cmd, token)

    def offset_delete(self, cmd: OffsetDelete, now_ms: int, token: Hashable) -> Result:
        # Kafka accepts "" for commits and fetches (backwards compatibility), not here.
        error = self._availability(cmd.group_id) if cmd.group_id else ErrorCode.INVALID_GROUP_ID
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return self._offsets.delete(cmd, token)

    def describe_groups(self, cmd: DescribeGroups, now_ms: int, token: Hashable) -> Result:
        return single_reply(
            token, DescribeGroupsReply(tuple(self._describe(g) for g in cmd.group_ids))
        )

    def _describe(self, group_id: str) -> DescribedGroup:
        error = self._availability(group_id)
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
            error = self._availability(group_id)
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
        group_type = self._types_by_timer.get(kind)
        if group_type is None:
            raise ValueError(f"unknown timer kind {kind!r}")
        group = self.state.groups.get(group_id)
        if group is None or group.group_type != group_type.name:
            return Result()
        return group_type.on_timer(key, group, now_ms)

    def consumer_group_describe(
        self, cmd: ConsumerGroupDescribe, now_ms: int, token: Hashable
    ) -> Result:
        described = []
        for group_id in cmd.group_ids:
            error = self._availability(group_id)
            group = self.state.groups.get(group_id)
            if error is not ErrorCode.NONE:
                described.append(DescribedConsumerGroup(group_id, error))
            elif group is None:
                described.append(
                    DescribedConsumerGroup(
                        group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
                    )
                )
            elif group.group_type != self._consumer.name:
                described.append(
                    DescribedConsumerGroup(
                        group_id,
                        ErrorCode.GROUP_ID_NOT_FOUND,
                        f"Group {group_id} is not a consumer group.",
                    )
                )
            else:
                described.append(self._consumer.describe_consumer_group(group))
        return single_reply(token, ConsumerGroupDescribeReply(tuple(described)))

    # =================================================================== topic metadata
    def topics_changed(self, metadata: TopicMetadata, now_ms: int) -> Result:
        """The shell's snapshot of the cluster's topics, sent at start and whenever a topic is
        created, grows or is deleted. Consumer groups assign on the server, so the core must
        know the topics; a snapshot pushed on change (rather than one per request) keeps
        heartbeats small and makes every epoch bump a recorded, replayable decision."""
        self._client_balance.topics_changed(metadata)
        return self._consumer.topics_changed(metadata, now_ms)

    def target_computed(
        self, inputs: TargetInputs, computed: ComputedTarget | None, now_ms: int
    ) -> Result:
        """A target assignment the shell computed off the loop (`Result.offloaded`); None
        if the assignor failed. Applied only if its group epoch is still current."""
        return self._consumer.target_computed(inputs, computed, now_ms)

    def offloaded_inputs(self) -> list[TargetInputs]:
        """The target inputs of every consumer group whose next target would be offloaded
        (`Result.offloaded`), as they are now: what the shell's worker can be sent ahead of
        that computation (the runtime primes it once the node has loaded)."""
        return self._consumer.offloaded_inputs()

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
    def group(self, group_id: str) -> Group | None:
        return self.state.groups.get(group_id)

    def groups(self) -> dict[str, Group]:
        return self.state.groups

    def armed_timers(self) -> dict[TimerKey, int]:
        return dict(self.state.timers)
