"""`ConsumerGroupType`: KIP-848 consumer groups as the core sees them (`GroupType`).

The work is done one module a phase; this class holds the two things they share (the core's
state and the topic metadata) and the views:

* `heartbeat`   a ConsumerGroupHeartbeat from validation to reply;
* `membership`  the group and member a heartbeat names: join, checks, static replacement;
* `departure`   leaves, fencing, and the timers that fence (session, rebalance timeout);
* `epochs`      group epoch bumps, the target assignment, one member's reconciliation step;
* `replay`      writing and replaying records, the group's tombstones;
* `routes`      the core's dispatch to all of these, and the classic requests it answers;
* `offsets`     who may commit and fetch, the topics the members consume.

Everything durable goes through records (`records.py`) and `CoordinatorState.apply`, so a
partition load replays to the same groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.commands import Command, OffsetCommit, OffsetFetch
from rebalance.consumer_group import departure, epochs, offsets, replay
from rebalance.consumer_group.commands import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from rebalance.consumer_group.epochs import subscribed_metadata
from rebalance.consumer_group.group import (
    GROUP_TYPE,
    ConsumerGroup,
    MemberState,
    Partitions,
    freeze,
)
from rebalance.consumer_group.records import ConsumerGroupRecord, ConsumerValue
from rebalance.consumer_group.replies import (
    DescribedConsumerGroup,
    DescribedConsumerMember,
    NamedAssignment,
)
from rebalance.consumer_group.routes import ConsumerRoutes
from rebalance.consumer_group.target import (
    ComputedTarget,
    TargetInputs,
    chosen_assignor,
    target_inputs,
)
from rebalance.consumer_group.timers import (
    CONSUMER_CLASSIC_JOIN,
    CONSUMER_CLASSIC_SYNC,
    CONSUMER_REVOCATION,
    CONSUMER_SESSION,
    consumer_revocation_key,
    consumer_session_key,
)
from rebalance.effects import Offload, Result
from rebalance.errors import ErrorCode
from rebalance.group_types import CommitPartitionValidator, GroupRoute, GroupType, Route
from rebalance.records import Record
from rebalance.replies import DescribedGroup, ListedGroup
from rebalance.state import CoordinatorState
from rebalance.timers import TimerKey
from rebalance.topics import TopicMetadata


class ConsumerGroupType(GroupType):
    """KIP-848 consumer groups over a `CoordinatorState`: requests, timers, records, views."""

    name: ClassVar[str] = GROUP_TYPE
    group_class: ClassVar[type[Any]] = ConsumerGroup
    record_class: ClassVar[type[Any]] = ConsumerGroupRecord
    timer_kinds: ClassVar[frozenset[str]] = frozenset(
        {CONSUMER_SESSION, CONSUMER_REVOCATION, CONSUMER_CLASSIC_JOIN, CONSUMER_CLASSIC_SYNC}
    )
    typed_commit_events: ClassVar[bool] = True

    __slots__ = ("metadata", "state")

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state
        #: The topics as the shell last described them (`topics_changed`). Kept here, not in
        #: records: it is the cluster's metadata, which the shell owns and replays on start.
        self.metadata = TopicMetadata()

    # -- requests ----------------------------------------------------------------------------
    def routes(self) -> Mapping[type[Command[Any]], Route]:
        routes = ConsumerRoutes(self)
        return {
            ConsumerGroupHeartbeat: routes.consumer_group_heartbeat,
            ConsumerGroupDescribe: routes.consumer_group_describe,
        }

    def foreign_routes(self) -> Mapping[type[Command[Any]], GroupRoute]:
        routes = ConsumerRoutes(self)
        return {
            JoinGroup: routes.classic_join,
            SyncGroup: routes.classic_sync,
            Heartbeat: routes.classic_heartbeat,
            LeaveGroup: routes.classic_leave,
        }

    # -- offsets -----------------------------------------------------------------------------
    def validate_offset_commit(
        self, result: Result, group: ConsumerGroup, cmd: OffsetCommit, now_ms: int
    ) -> CommitPartitionValidator | None:
        return offsets.validate_commit(group, cmd, self.metadata)

    def validate_offset_fetch(self, group: ConsumerGroup, cmd: OffsetFetch) -> None:
        offsets.validate_fetch(group, cmd)

    def subscribed_topics(self, group: ConsumerGroup) -> set[str] | None:
        return offsets.subscribed_topics(group)

    # -- timers, offloaded targets -----------------------------------------------------------
    def on_timer(self, key: TimerKey, group: ConsumerGroup, now_ms: int) -> Result:
        return departure.expire(self.state, self.metadata, key, group, now_ms)

    def target_computed(
        self, group: ConsumerGroup, inputs: Offload, computed: Any, now_ms: int
    ) -> Result:
        assert isinstance(inputs, TargetInputs)
        assert computed is None or isinstance(computed, ComputedTarget)
        return epochs.target_computed(self.state, self.metadata, group, inputs, computed, now_ms)

    def offloaded_inputs(self) -> list[Offload]:
        """The target inputs of every group whose next target is computed off the loop, as
        they are now (the shell primes its worker with them once loaded)."""
        return [
            target_inputs(group, self.metadata, self.state.config)
            for _, group in sorted(self.state.groups.items())
            if isinstance(group, ConsumerGroup)
            and group.members
            and epochs.offloads(self.state, self.metadata, group)
        ]

    # -- metadata, partitions ----------------------------------------------------------------
    def topics_changed(self, metadata: TopicMetadata, now_ms: int) -> Result:
        """The shell's new topic snapshot: every group whose subscribed topics changed
        (created, grown, deleted) checks its metadata at its next heartbeat, which bumps the
        group epoch and computes the target (Kafka's `onNewMetadataImage` asks the groups
        subscribed to a changed topic for a `requestMetadataRefresh`; nothing is written
        until a member heartbeats: ConsumerGroupDescribe shows the old epoch meanwhile)."""
        self.metadata = metadata
        for group in self.state.groups.values():
            if (
                isinstance(group, ConsumerGroup)
                and group.members
                and subscribed_metadata(group, metadata) != group.subscribed_metadata
            ):
                group.metadata_refresh = True
        return Result()

    def loaded(self, result: Result, group: ConsumerGroup, now_ms: int) -> None:
        """Sessions run from load time; a member caught revoking gets its rebalance timeout
        again (Kafka's `onLoaded`). Nothing is computed or bumped here: the first heartbeat
        checks the metadata (which may have moved while nobody owned the group) and brings the
        target up to the group epoch, as in Kafka, whose loaded group's refresh deadline is
        unset."""
        for member in group.members.values():
            session_ms = (
                self.state.config.group_consumer_session_timeout_ms
                if member.classic is None
                else member.classic.session_timeout_ms  # a classic member's own
            )
            self.state.schedule(
                result,
                consumer_session_key(group.group_id, member.member_id),
                now_ms + session_ms,
            )
            # A classic member has no revocation timer (it revokes by rejoining).
            if member.state is MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                self.state.schedule(
                    result,
                    consumer_revocation_key(group.group_id, member.member_id),
                    now_ms + member.rebalance_timeout_ms,
                )
        group.metadata_refresh = True

    @staticmethod
    def unloaded(result: Result, group: ConsumerGroup) -> None:
        """Nothing is ever parked: every heartbeat is answered at once."""

    # -- records -----------------------------------------------------------------------------
    @staticmethod
    def replay(group: ConsumerGroup, value: ConsumerValue) -> None:
        replay.replay(group, value)

    @staticmethod
    def tombstones(group: ConsumerGroup) -> list[Record]:
        return replay.tombstones(group)

    # -- views -------------------------------------------------------------------------------
    @staticmethod
    def describe(group: ConsumerGroup) -> DescribedGroup:
        """DescribeGroups is the classic groups' API: Kafka describes a consumer group as it
        describes an unknown one ("Group X is not a classic group": Dead with no error before
        v6, GROUP_ID_NOT_FOUND from v6). ConsumerGroupDescribe is the API for these groups."""
        return DescribedGroup(group.group_id, ErrorCode.NONE, state="Dead")

    def describe_consumer_group(self, group: ConsumerGroup) -> DescribedConsumerGroup:
        """ConsumerGroupDescribe of a live group (Kafka's `ConsumerGroup.asDescribedGroup`)."""
        by_id = self.metadata.by_id()

        def named(partitions: Partitions) -> NamedAssignment:
            # Kafka leaves out topics the metadata no longer has.
            return tuple((t, by_id[t].name, ps) for t, ps in freeze(partitions) if t in by_id)

        return DescribedConsumerGroup(
            group.group_id,
            ErrorCode.NONE,
            state=group.kafka_state,
            group_epoch=group.group_epoch,
            assignment_epoch=group.target_epoch,
            assignor=chosen_assignor(group, self.state.config),
            members=tuple(
                DescribedConsumerMember(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    # Kafka 4.4 shows what the member holds: its assigned partitions and
                    # those it is still revoking (checked against the broker).
                    assignment=named(held(m.assigned, m.pending_revocation)),
                    target_assignment=named(group.target.get(m.member_id, {})),
                    classic=m.classic is not None,
                )
                for m in group.members.values()
            ),
        )

    @staticmethod
    def listed(group: ConsumerGroup) -> ListedGroup:
        return ListedGroup(group.group_id, "consumer", group.kafka_state, GROUP_TYPE)

    @staticmethod
    def deletable(group: ConsumerGroup) -> ErrorCode:
        return ErrorCode.NONE if group.empty else ErrorCode.NON_EMPTY_GROUP


def held(assigned: Partitions, revoking: Partitions) -> Partitions:
    """Both sets of partitions, topic by topic."""
    if not revoking:
        return assigned
    merged = {t: set(ps) for t, ps in assigned.items()}
    for t, ps in revoking.items():
        merged.setdefault(t, set()).update(ps)
    return merged
