"""`ConsumerGroupType`: KIP-848 consumer groups as the core sees them (`GroupType`).

One heartbeat does, in order (Kafka's `GroupMetadataManager.consumerGroupHeartbeat`):

1. validate the request (`validation.py`);
2. find the group (epoch 0 creates it; an empty classic group of that id becomes a consumer
   group, offsets kept) and the member (epoch 0 joins or rejoins; a static member whose previous
   incarnation left with epoch -2 is replaced and inherits its assignment), or answer
   GROUP_ID_NOT_FOUND / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID / UNRELEASED_INSTANCE_ID /
   GROUP_MAX_SIZE_REACHED / FENCED_MEMBER_EPOCH;
3. apply a changed subscription; bump the group epoch when the membership, a subscription or the
   metadata of the subscribed topics changed;
4. compute the target assignment when its epoch is behind the group epoch (`target.py`);
5. reconcile this member one step (`reconcile.py`) and answer with its epoch and, when it
   changed or the request was a full one, its assignment.

Everything durable goes through records (`records.py`) and `CoordinatorState.apply`, so a
partition load replays to the same groups. Timers: each member's session, and its rebalance
timeout while it has partitions to revoke; both fence the member when they fire.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar

from rebalance.consumer_group.commands import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeat,
)
from rebalance.consumer_group.group import (
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    TopicMetadata,
    count,
    freeze,
    thaw,
)
from rebalance.consumer_group.reconcile import next_assignment
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
from rebalance.consumer_group.target import chosen_assignor, compute_target
from rebalance.consumer_group.validation import validate
from rebalance.effects import Result, single_reply
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import ConsumerTrigger, EventType, ExpiryReason, LeaveReason
from rebalance.lifecycle import GroupState
from rebalance.records import GroupMetadataRecord, Record
from rebalance.replies import (
    ConsumerGroupHeartbeatReply,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedGroup,
    ListedGroup,
    NamedAssignment,
)
from rebalance.state import CoordinatorState
from rebalance.timers import (
    CONSUMER_REVOCATION,
    CONSUMER_SESSION,
    TimerKey,
    consumer_revocation_key,
    consumer_session_key,
)

GROUP_TYPE = "consumer"


class ConsumerGroupType:
    """KIP-848 consumer groups over a `CoordinatorState`: requests, timers, records, views."""

    name: ClassVar[str] = GROUP_TYPE
    group_class: ClassVar[type[Any]] = ConsumerGroup
    record_class: ClassVar[type[Any]] = ConsumerGroupRecord
    timer_kinds: ClassVar[frozenset[str]] = frozenset({CONSUMER_SESSION, CONSUMER_REVOCATION})

    __slots__ = ("metadata", "state")

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state
        #: The topics as the shell last described them (`topics_changed`). Kept here, not in
        #: records: it is the cluster's metadata, which the shell owns and replays on start.
        self.metadata = TopicMetadata()

    # ============================================================================ heartbeat
    def heartbeat(self, cmd: ConsumerGroupHeartbeat, now_ms: int, token: Hashable) -> Result:
        result = Result()
        try:
            validate(cmd, self.state.config)
            reply = self._heartbeat(result, cmd, now_ms)
        except CoordinatorError as exc:
            return single_reply(
                token,
                ConsumerGroupHeartbeatReply(
                    exc.code, exc.message or None, member_id=cmd.member_id or None
                ),
            )
        result.reply(token, reply)
        return result

    def _heartbeat(
        self, result: Result, cmd: ConsumerGroupHeartbeat, now_ms: int
    ) -> ConsumerGroupHeartbeatReply:
        group = self._group(result, cmd)
        if cmd.member_epoch == LEAVE_EPOCH or cmd.member_epoch == STATIC_LEAVE_EPOCH:
            return self._leave(result, group, cmd, now_ms)
        member, trigger = self._member(result, group, cmd, now_ms)
        trigger = self._update_subscription(result, group, member, cmd) or trigger
        # Without a join or a subscription change, the subscribed topics' metadata can only
        # have moved through `topics_changed`, which bumped the epoch then: a plain heartbeat
        # skips that check (it walks every member: quadratic over a round of heartbeats).
        self._maybe_bump(result, group, trigger, now_ms, check_metadata=trigger is not None)
        before = member.current_value()
        owned = None if cmd.topic_partitions is None else thaw(cmd.topic_partitions)
        self._reconcile(result, group, member, owned, now_ms)
        self.state.schedule(
            result,
            consumer_session_key(group.group_id, member.member_id),
            now_ms + self.state.config.group_consumer_session_timeout_ms,
        )
        full = cmd.member_epoch == JOIN_EPOCH or (
            cmd.rebalance_timeout_ms != -1
            and (cmd.subscribed_topic_names is not None or cmd.subscribed_topic_regex is not None)
            and cmd.topic_partitions is not None
        )
        changed = before.assigned != freeze(member.assigned)
        return ConsumerGroupHeartbeatReply(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.state.config.group_consumer_heartbeat_interval_ms,
            assignment=freeze(member.assigned) if full or changed else None,
        )

    def _group(self, result: Result, cmd: ConsumerGroupHeartbeat) -> ConsumerGroup:
        group = self.state.groups.get(cmd.group_id)
        joining = cmd.member_epoch == JOIN_EPOCH
        if group is None:
            if not joining:
                raise CoordinatorError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {cmd.group_id} not found."
                )
        elif not isinstance(group, ConsumerGroup):
            # Kafka converts an empty classic group (`maybeDeleteEmptyClassicGroup`); a
            # non-empty one is converted online under its migration policy.
            # DIFFERS: online upgrade of a classic group with members is not implemented yet.
            if not (joining and group.empty):
                raise CoordinatorError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Group {cmd.group_id} is not a consumer group."
                )
            group = None
        if group is None:
            # The group epoch record creates it (replay converts an empty classic group,
            # keeping its offsets); epoch 0 with no subscribed topics yet.
            classic = cmd.group_id in self.state.groups
            self._apply(result, cmd.group_id, GroupEpochValue(0, ()))
            if classic:  # clears the classic group's row; the consumer group stays
                self.state.apply(result, GroupMetadataRecord(cmd.group_id, None))
            created = self.state.groups[cmd.group_id]
            assert isinstance(created, ConsumerGroup)
            return created
        return group

    def _member(
        self, result: Result, group: ConsumerGroup, cmd: ConsumerGroupHeartbeat, now_ms: int
    ) -> tuple[ConsumerMember, ConsumerTrigger | None]:
        """The member this heartbeat is from, admitted or replaced if it joins."""
        if cmd.member_epoch != JOIN_EPOCH:
            member = group.members.get(cmd.member_id)
            if member is None:
                raise CoordinatorError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {cmd.member_id} is not a member of group {group.group_id}.",
                )
            self._check_instance(group, cmd)
            self._check_epoch(member, cmd)
            return member, None
        if cmd.instance_id is not None:
            holder = group.static_members.get(cmd.instance_id)
            if holder is not None and holder != cmd.member_id:
                previous = group.members[holder]
                if previous.member_epoch != STATIC_LEAVE_EPOCH:
                    raise CoordinatorError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {cmd.member_id or '(new)'} with instance id "
                        f"{cmd.instance_id} cannot join the group because the instance id is "
                        f"owned by {holder} member.",
                    )
                return self._replace_static(result, group, previous, cmd, now_ms), None
        member_id = cmd.member_id or str(self.state.rng.uuid4())  # v0: the server chooses
        member = group.members.get(member_id)
        if member is not None:
            return member, None  # a rejoin: same member, it owns nothing now
        if len(group.members) >= self.state.config.group_consumer_max_size:
            raise CoordinatorError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of "
                f"{self.state.config.group_consumer_max_size} members.",
            )
        self._apply(result, group.group_id, self._subscription(ConsumerMember(member_id), cmd))
        member = group.members[member_id]
        _member_joined(result, group, member_id, cmd, now_ms)
        return member, ConsumerTrigger.MEMBER_JOINED

    @staticmethod
    def _check_instance(group: ConsumerGroup, cmd: ConsumerGroupHeartbeat) -> None:
        if cmd.instance_id is None:
            return
        holder = group.static_members.get(cmd.instance_id)
        if holder is None:
            raise CoordinatorError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Instance id {cmd.instance_id} is unknown in group {group.group_id}.",
            )
        if holder != cmd.member_id:
            raise CoordinatorError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {cmd.member_id} with instance id {cmd.instance_id} was fenced "
                f"by member {holder}.",
            )

    @staticmethod
    def _check_epoch(member: ConsumerMember, cmd: ConsumerGroupHeartbeat) -> None:
        """Kafka's `throwIfMemberEpochIsInvalid`: an epoch ahead of ours, or behind it other
        than the previous epoch with a subset of the current partitions (the reply that
        bumped it may have been lost), fences the member."""
        received = cmd.member_epoch
        if received > member.member_epoch:
            raise CoordinatorError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({received}) than the "
                f"one known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )
        if received < member.member_epoch:
            owned = thaw(cmd.topic_partitions or ())
            subset = cmd.topic_partitions is not None and all(
                ps <= member.assigned.get(t, set()) for t, ps in owned.items()
            )
            if received != member.previous_member_epoch or not subset:
                raise CoordinatorError(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({received}) than "
                    f"the one known by the group coordinator ({member.member_epoch}). The "
                    "member must abandon all its partitions and rejoin.",
                )

    def _replace_static(
        self,
        result: Result,
        group: ConsumerGroup,
        previous: ConsumerMember,
        cmd: ConsumerGroupHeartbeat,
        now_ms: int,
    ) -> ConsumerMember:
        """A static member back after its temporary leave (-2): the new member id takes over
        the old one's subscription, target and current assignment at once, so the partitions
        never move (KIP-345's promise, kept by KIP-848)."""
        member_id = cmd.member_id or str(self.state.rng.uuid4())
        target = freeze(group.target.get(previous.member_id, {}))
        current = previous.current_value()
        self._remove(result, group, previous)
        state = self.state
        state.cancel(result, consumer_session_key(group.group_id, previous.member_id))
        state.cancel(result, consumer_revocation_key(group.group_id, previous.member_id))
        self._apply(result, group.group_id, self._subscription(ConsumerMember(member_id), cmd))
        self._apply(result, group.group_id, TargetMemberValue(member_id, target))
        self._apply(
            result,
            group.group_id,
            CurrentAssignmentValue(
                member_id,
                current.previous_member_epoch if current.member_epoch < 0 else current.member_epoch,
                current.previous_member_epoch,
                current.state,
                current.assigned,
                current.pending_revocation,
            ),
        )
        result.event(
            EventType.MEMBER_EXPIRED,
            now_ms,
            group.group_id,
            group.group_epoch,
            previous.member_id,
            group_type=GROUP_TYPE,
            reason=ExpiryReason.REPLACED,
        )
        _member_joined(result, group, member_id, cmd, now_ms)
        return group.members[member_id]

    @staticmethod
    def _subscription(member: ConsumerMember, cmd: ConsumerGroupHeartbeat) -> MemberValue:
        """`member`'s subscription with the fields `cmd` sets (None: unchanged)."""
        return MemberValue(
            member.member_id,
            cmd.instance_id if cmd.instance_id is not None else member.instance_id,
            cmd.rack_id if cmd.rack_id is not None else member.rack_id,
            cmd.client_id,
            cmd.client_host,
            cmd.rebalance_timeout_ms
            if cmd.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            cmd.subscribed_topic_names
            if cmd.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            # Kafka: an empty regex clears it.
            (cmd.subscribed_topic_regex or None)
            if cmd.subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            cmd.server_assignor if cmd.server_assignor is not None else member.server_assignor,
        )

    def _update_subscription(
        self,
        result: Result,
        group: ConsumerGroup,
        member: ConsumerMember,
        cmd: ConsumerGroupHeartbeat,
    ) -> ConsumerTrigger | None:
        value = self._subscription(member, cmd)
        old = member.subscription_value()
        if value == old:
            return None
        self._apply(result, group.group_id, value)
        if (
            value.subscribed_topic_names != old.subscribed_topic_names
            or value.subscribed_topic_regex != old.subscribed_topic_regex
            or value.server_assignor != old.server_assignor
            or value.rack_id != old.rack_id
        ):
            return ConsumerTrigger.SUBSCRIPTION_CHANGED
        return None

    # ====================================================================== epochs, target
    def _subscribed_metadata(self, group: ConsumerGroup) -> tuple[tuple[str, str, int], ...]:
        topics = self.metadata.topics
        return tuple(
            (name, topics[name].topic_id, topics[name].partitions)
            for name in sorted(group.subscribed_topic_names(self.metadata))
        )

    def _maybe_bump(
        self,
        result: Result,
        group: ConsumerGroup,
        trigger: ConsumerTrigger | None,
        now_ms: int,
        *,
        check_metadata: bool = True,
    ) -> None:
        """Bump the group epoch if `trigger` says so or the subscribed topics' metadata moved,
        then bring the target assignment up to the group epoch."""
        metadata = (
            self._subscribed_metadata(group) if check_metadata or trigger is not None else None
        )
        if trigger is None and metadata is not None and metadata != group.subscribed_metadata:
            trigger = ConsumerTrigger.METADATA_CHANGED
        if trigger is not None and metadata is not None:
            self._apply(result, group.group_id, GroupEpochValue(group.group_epoch + 1, metadata))
            result.event(
                EventType.GROUP_EPOCH_BUMPED,
                now_ms,
                group.group_id,
                group.group_epoch,
                group_type=GROUP_TYPE,
                trigger=trigger,
                members=len(group.members),
            )
        if group.target_epoch != group.group_epoch:
            self._assign(result, group, now_ms)

    def _assign(self, result: Result, group: ConsumerGroup, now_ms: int) -> None:
        assignor = chosen_assignor(group, self.state.config)
        target = compute_target(group, self.metadata, assignor)
        for member_id in sorted(target):
            if target[member_id] != group.target.get(member_id, {}):
                self._apply(
                    result, group.group_id, TargetMemberValue(member_id, freeze(target[member_id]))
                )
        self._apply(result, group.group_id, TargetEpochValue(group.group_epoch))
        by_id = self.metadata.by_id()
        result.event(
            EventType.TARGET_ASSIGNMENT,
            now_ms,
            group.group_id,
            group.target_epoch,
            group_type=GROUP_TYPE,
            assignor=assignor,
            assignments={
                member_id: [
                    [by_id[t].name if t in by_id else t, sorted(ps)]
                    for t, ps in sorted(partitions.items())
                ]
                for member_id, partitions in sorted(target.items())
            },
        )

    def _reconcile(
        self,
        result: Result,
        group: ConsumerGroup,
        member: ConsumerMember,
        owned: Partitions | None,
        now_ms: int,
    ) -> None:
        """One reconciliation step for `member`; its revocation timer runs while it revokes."""
        value = next_assignment(
            member,
            group.target.get(member.member_id, {}),
            group.target_epoch,
            group.owner_of,
            owned,
        )
        if value == member.current_value():
            return
        self._apply(result, group.group_id, value)
        key = consumer_revocation_key(group.group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            self.state.schedule(result, key, now_ms + member.rebalance_timeout_ms)
        else:
            self.state.cancel(result, key)
        result.event(
            EventType.MEMBER_RECONCILED,
            now_ms,
            group.group_id,
            member.member_epoch,
            member.member_id,
            group_type=GROUP_TYPE,
            member_state=str(member.state),
            assigned=count(member.assigned),
            revoking=count(member.pending_revocation),
            target_epoch=group.target_epoch,
        )

    # ======================================================================== leaving
    def _leave(
        self, result: Result, group: ConsumerGroup, cmd: ConsumerGroupHeartbeat, now_ms: int
    ) -> ConsumerGroupHeartbeatReply:
        if cmd.member_epoch == STATIC_LEAVE_EPOCH:
            assert cmd.instance_id is not None  # validated
            holder = group.static_members.get(cmd.instance_id)
            if holder is None:
                raise CoordinatorError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Instance id {cmd.instance_id} is unknown in group {group.group_id}.",
                )
            if holder != cmd.member_id:
                raise CoordinatorError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {cmd.member_id} with instance id {cmd.instance_id} was "
                    f"fenced by member {holder}.",
                )
            member = group.members[holder]
            # A temporary leave: the member keeps its partitions (nobody else gets them) until
            # it comes back under a new id or its session expires.
            current = member.current_value()
            self._apply(
                result,
                group.group_id,
                CurrentAssignmentValue(
                    member.member_id,
                    STATIC_LEAVE_EPOCH,
                    member.member_epoch
                    if member.member_epoch >= 0
                    else member.previous_member_epoch,
                    current.state,
                    current.assigned,
                    current.pending_revocation,
                ),
            )
            self.state.cancel(result, consumer_revocation_key(group.group_id, member.member_id))
            result.event(
                EventType.MEMBER_LEFT,
                now_ms,
                group.group_id,
                group.group_epoch,
                member.member_id,
                group_type=GROUP_TYPE,
                reason=LeaveReason.LEAVE,
            )
            return ConsumerGroupHeartbeatReply(
                ErrorCode.NONE, member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH
            )
        leaving = group.members.get(cmd.member_id)
        if leaving is None:
            raise CoordinatorError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {cmd.member_id} is not a member of group {group.group_id}.",
            )
        self._fence(result, group, leaving, now_ms, None)
        return ConsumerGroupHeartbeatReply(
            ErrorCode.NONE, member_id=leaving.member_id, member_epoch=LEAVE_EPOCH
        )

    def _fence(
        self,
        result: Result,
        group: ConsumerGroup,
        member: ConsumerMember,
        now_ms: int,
        expiry: ExpiryReason | None,
    ) -> None:
        """Remove `member` (leave, session or revocation timeout) and re-target the rest."""
        self._remove(result, group, member)
        self.state.cancel(result, consumer_session_key(group.group_id, member.member_id))
        self.state.cancel(result, consumer_revocation_key(group.group_id, member.member_id))
        if expiry is None:
            result.event(
                EventType.MEMBER_LEFT,
                now_ms,
                group.group_id,
                group.group_epoch,
                member.member_id,
                group_type=GROUP_TYPE,
                reason=LeaveReason.LEAVE,
            )
        else:
            result.event(
                EventType.MEMBER_EXPIRED,
                now_ms,
                group.group_id,
                group.group_epoch,
                member.member_id,
                group_type=GROUP_TYPE,
                reason=expiry,
            )
        trigger = ConsumerTrigger.MEMBER_LEFT if expiry is None else ConsumerTrigger.MEMBER_EXPIRED
        self._maybe_bump(result, group, trigger, now_ms)

    def _remove(self, result: Result, group: ConsumerGroup, member: ConsumerMember) -> None:
        for kind in (RecordKind.CURRENT, RecordKind.TARGET_MEMBER, RecordKind.MEMBER):
            self._apply(result, group.group_id, Tombstone(kind, member.member_id))

    # ========================================================================== timers
    def on_timer(self, key: TimerKey, group: ConsumerGroup, now_ms: int) -> Result:
        kind, _, member_id = key
        result = Result()
        member = group.members.get(member_id)
        if member is None:
            return result
        if kind == CONSUMER_SESSION:
            self._fence(result, group, member, now_ms, ExpiryReason.SESSION_TIMEOUT)
        elif member.state is MemberState.UNREVOKED_PARTITIONS:
            self._fence(result, group, member, now_ms, ExpiryReason.REVOCATION_TIMEOUT)
        return result

    # ============================================================ metadata, partitions
    def topics_changed(self, metadata: TopicMetadata, now_ms: int) -> Result:
        """The shell's new topic snapshot: every live group whose subscribed topics changed
        (created, grown, deleted) gets a new group epoch and target assignment."""
        self.metadata = metadata
        result = Result()
        for group_id in sorted(self.state.groups):
            group = self.state.groups[group_id]
            live = isinstance(group, ConsumerGroup) and group.state is GroupState.STABLE
            if live and group.members:
                self._maybe_bump(result, group, None, now_ms)
        return result

    def loaded(self, result: Result, group: ConsumerGroup, now_ms: int) -> None:
        """Sessions run from load time; a member caught revoking gets its rebalance timeout
        again; metadata that moved while nobody owned the group bumps its epoch now."""
        for member in group.members.values():
            self.state.schedule(
                result,
                consumer_session_key(group.group_id, member.member_id),
                now_ms + self.state.config.group_consumer_session_timeout_ms,
            )
            if member.state is MemberState.UNREVOKED_PARTITIONS:
                self.state.schedule(
                    result,
                    consumer_revocation_key(group.group_id, member.member_id),
                    now_ms + member.rebalance_timeout_ms,
                )
        if group.members:
            self._maybe_bump(result, group, None, now_ms)

    @staticmethod
    def unloaded(result: Result, group: ConsumerGroup) -> None:
        """Nothing is ever parked: every heartbeat is answered at once."""

    # ========================================================================= records
    def _apply(self, result: Result, group_id: str, value: ConsumerValue) -> None:
        self.state.apply(result, ConsumerGroupRecord(group_id, value))

    @staticmethod
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
            member.apply_subscription(value)
            if value.instance_id is not None:
                group.static_members[value.instance_id] = value.member_id
        elif isinstance(value, TargetMemberValue):
            group.target[value.member_id] = thaw(value.partitions)
        elif isinstance(value, TargetEpochValue):
            group.target_epoch = value.epoch
        elif isinstance(value, CurrentAssignmentValue):
            member = group.members.get(value.member_id)
            if member is None:  # written before its subscription: a malformed log
                raise ValueError(f"current assignment of unknown member {value.member_id!r}")
            group.set_current(member, value)
        else:
            _replay_tombstone(group, value)

    def tombstones(self, group: ConsumerGroup) -> list[Record]:
        """The records that delete `group` (DeleteGroups, offsets expiry): every key it has."""
        records: list[Record] = []
        for member_id in sorted(group.members):
            for kind in (RecordKind.CURRENT, RecordKind.TARGET_MEMBER, RecordKind.MEMBER):
                records.append(ConsumerGroupRecord(group.group_id, Tombstone(kind, member_id)))
        records.append(ConsumerGroupRecord(group.group_id, Tombstone(RecordKind.TARGET_EPOCH, "")))
        records.append(ConsumerGroupRecord(group.group_id, None))
        return records

    # ========================================================================== views
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
                    assignment=named(m.assigned),
                    target_assignment=named(group.target.get(m.member_id, {})),
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


def _member_joined(
    result: Result,
    group: ConsumerGroup,
    member_id: str,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
) -> None:
    result.event(
        EventType.MEMBER_JOINED,
        now_ms,
        group.group_id,
        group.group_epoch,
        member_id,
        group_type=GROUP_TYPE,
        client_id=cmd.client_id,
        instance_id=cmd.instance_id,
        protocols=[],
    )


def _replay_tombstone(group: ConsumerGroup, value: Tombstone) -> None:
    member = group.members.get(value.member_id)
    if value.kind is RecordKind.CURRENT:
        if member is not None:
            group.release_all(member)
            member.assigned = {}
            member.pending_revocation = {}
            member.state = MemberState.STABLE
            member.member_epoch = 0
            member.previous_member_epoch = -1
    elif value.kind is RecordKind.TARGET_MEMBER:
        group.target.pop(value.member_id, None)
    elif value.kind is RecordKind.MEMBER:
        group.remove_member(value.member_id)
    elif value.kind is RecordKind.TARGET_EPOCH:
        group.target_epoch = 0
