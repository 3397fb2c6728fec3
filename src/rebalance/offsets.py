"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (Kafka's `OffsetMetadataManager`).

Commits are fenced by generation (spec §3.1): a commit carrying a member id or a generation must
come from a current member of the current generation; commits during AWAITING_SYNC get
REBALANCE_IN_PROGRESS; generation -1 commits to an empty group need no member at all (admin
tools and consumers with manual assignment). Accepted offsets become records; `replay` stores them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from rebalance.classic.group import Group
from rebalance.client_balance.group import ClientBalanceGroup
from rebalance.client_balance.group_type import ClientBalanceGroupType
from rebalance.commands import OffsetCommit, OffsetDelete, OffsetFetch
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import DeleteReason, EventType
from rebalance.lifecycle import GroupState
from rebalance.records import OffsetAndMetadata, OffsetCommitRecord, Record
from rebalance.replies import (
    FetchedOffset,
    OffsetCommitReply,
    OffsetDeleteReply,
    OffsetFetchReply,
)
from rebalance.state import CoordinatorState
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE, group_subscriptions
from rebalance.timers import session_key


def _java_length(text: str) -> int:
    """`String.length()`: UTF-16 code units (what offset.metadata.max.bytes is compared with)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class Offsets:
    __slots__ = ("state",)

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state

    # ======================================================================== OffsetCommit
    def commit(self, cmd: OffsetCommit, now_ms: int, token: Hashable) -> Result:
        result = Result()
        # A consumer group's commits say so in the event log; classic ones stay untyped.
        typed = (
            {"group_type": ConsumerGroup.group_type}
            if isinstance(self.state.groups.get(cmd.group_id), ConsumerGroup)
            else {}
        )
        try:
            self._validate_commit(result, cmd, now_ms)
        except CoordinatorError as exc:
            result.reply(token, cmd.error_reply(exc.code))
            result.event(
                EventType.COMMIT_FENCED,
                now_ms,
                cmd.group_id,
                cmd.generation_id,
                cmd.member_id or None,
                error=exc.code.name,
                code=int(exc.code),
                **typed,
            )
            return result
        limit = self.state.config.offset_metadata_max_bytes
        expire = (
            now_ms + cmd.retention_time_ms
            if 2 <= cmd.version <= 4 and cmd.retention_time_ms != -1
            else None
        )
        group = self.state.groups.get(cmd.group_id)
        # Client-balance groups fence each partition by its holder (generation: member epoch).
        fenced = isinstance(group, ClientBalanceGroup) and not (
            cmd.generation_id < 0 and group.empty
        )
        # Per partition this is the hot path of every commit: no call that is not needed
        # (metadata of at most limit // 2 characters is within the limit in UTF-16 units, so
        # only longer metadata is measured), and the records are applied together at the end.
        half_limit = limit // 2
        v1 = cmd.version == 1
        group_id = cmd.group_id
        records: list[OffsetCommitRecord] = []
        topics = []
        for topic in cmd.topics:
            name = topic.name
            outcomes: list[tuple[int, ErrorCode]] = []
            for p in topic.partitions:
                metadata = p.metadata if p.metadata is not None else ""
                if fenced:
                    assert isinstance(group, ClientBalanceGroup)
                    error = ClientBalanceGroupType.commit_error(
                        group, cmd.member_id, cmd.generation_id, (name, p.partition)
                    )
                    if error is not ErrorCode.NONE:
                        outcomes.append((p.partition, error))
                        continue
                if len(metadata) > half_limit and _java_length(metadata) > limit:
                    outcomes.append((p.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                    continue
                explicit = v1 and p.commit_timestamp_ms >= 0  # v1 only
                stamp = p.commit_timestamp_ms if explicit else now_ms
                value = OffsetAndMetadata(p.offset, p.leader_epoch, metadata, stamp, expire)
                records.append(OffsetCommitRecord(group_id, name, p.partition, value))
                outcomes.append((p.partition, ErrorCode.NONE))
            topics.append((name, tuple(outcomes)))
        self.state.apply_offsets(result, group_id, records)
        result.reply(token, OffsetCommitReply(tuple(topics)))
        result.event(
            EventType.OFFSET_COMMIT,
            now_ms,
            cmd.group_id,
            cmd.generation_id,
            cmd.member_id or None,
            partitions=len(result.records),
            **typed,
        )
        return result

    def _validate_commit(self, result: Result, cmd: OffsetCommit, now_ms: int) -> None:
        """Raise the group-level error for a commit, or refresh the committer's session."""
        group = self.state.groups.get(cmd.group_id)
        if group is None:
            if cmd.generation_id < 0:
                return  # a simple group: its first offset record creates it
            raise CoordinatorError(
                ErrorCode.GROUP_ID_NOT_FOUND if cmd.version >= 9 else ErrorCode.ILLEGAL_GENERATION
            )
        if cmd.generation_id < 0 and group.empty:
            return  # no member or instance validation (spec §3.1 rule 3)
        if isinstance(group, ConsumerGroup):
            _validate_consumer_commit(group, cmd)
            return
        if isinstance(group, ClientBalanceGroup):
            _validate_client_balance_commit(group, cmd)
            return
        if cmd.generation_id >= 0 or cmd.member_id or cmd.group_instance_id is not None:
            member = group.validate_member(cmd.member_id, cmd.group_instance_id)
            if cmd.generation_id != group.generation:
                raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)
        else:
            raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is GroupState.AWAITING_SYNC:
            raise CoordinatorError(ErrorCode.REBALANCE_IN_PROGRESS)
        # Accepted in STABLE and JOINING (the previous generation may still commit): a commit
        # is proof of life, so it refreshes the member's session.
        self.state.schedule(
            result,
            session_key(group.group_id, member.member_id),
            now_ms + member.session_timeout_ms,
        )

    # ========================================================================= OffsetFetch
    def fetch(self, cmd: OffsetFetch, token: Hashable) -> Result:
        result = Result()
        group = self.state.groups.get(cmd.group_id)
        if isinstance(group, ConsumerGroup):
            try:
                _validate_consumer_fetch(group, cmd)
            except CoordinatorError as exc:
                result.reply(token, cmd.error_reply(exc.code))
                return result
        offsets = group.offsets if group is not None else {}
        if cmd.topics is None:
            by_topic: dict[str, list[FetchedOffset]] = {}
            for (topic, partition), stored in sorted(offsets.items()):
                by_topic.setdefault(topic, []).append(_fetched(partition, stored))
            topics = tuple((topic, tuple(found)) for topic, found in by_topic.items())
        else:
            topics = tuple(
                (topic, tuple(_fetched(p, offsets.get((topic, p))) for p in partitions))
                for topic, partitions in cmd.topics
            )
        # No transactions here, so nothing is ever pending: require_stable never yields
        # UNSTABLE_OFFSET_COMMIT (Kafka's new coordinator behaves the same without transactions).
        result.reply(token, OffsetFetchReply(ErrorCode.NONE, topics))
        return result

    # ======================================================================== OffsetDelete
    def delete(self, cmd: OffsetDelete, token: Hashable) -> Result:
        result = Result()
        group = self.state.groups.get(cmd.group_id)
        if group is None:
            result.reply(token, OffsetDeleteReply(ErrorCode.GROUP_ID_NOT_FOUND))
            return result
        if group.members and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            result.reply(token, OffsetDeleteReply(ErrorCode.NON_EMPTY_GROUP))
            return result
        subscribed = group_subscriptions(group) if group.members else set()
        topics = []
        for topic, partitions in cmd.topics:
            if subscribed is None or topic in subscribed:
                code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                topics.append((topic, tuple((p, code) for p in partitions)))
                continue
            for p in partitions:
                if (topic, p) in group.offsets:
                    self.state.apply(result, OffsetCommitRecord(group.group_id, topic, p, None))
            topics.append((topic, tuple((p, ErrorCode.NONE) for p in partitions)))
        result.reply(token, OffsetDeleteReply(ErrorCode.NONE, tuple(topics)))
        return result

    # ===================================================================== deleted topics
    def forget_topics(self, group: Group, topics: frozenset[str]) -> Result:
        """Drop the group's offsets of deleted topics (Kafka's `onPartitionsDeleted`); an empty
        group left with no offsets is removed by the next retention check, as in Kafka."""
        result = Result()
        for topic, partition in sorted(group.offsets):
            if topic in topics:
                self.state.apply(result, OffsetCommitRecord(group.group_id, topic, partition, None))
        return result

    # ============================================================================= expiry
    def expire(
        self, group: Group, now_ms: int, tombstones: Callable[[Any], list[Record]]
    ) -> Result:
        """Drop expired offsets of one group; delete the group if it is empty and bare."""
        result = Result()
        retention = self.state.config.offsets_retention_ms
        base_from_state = False
        protected: set[str] | None = set()
        empty = group.empty
        if group.protocol_type is None:
            pass  # simple group: by commit time
        elif empty:
            base_from_state = True
        elif (
            group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and group.state is GroupState.STABLE
            and (protected := group_subscriptions(group)) is not None
        ):
            pass  # only topics nobody subscribes to, by commit time
        else:
            return result  # rebalancing, or a non-consumer protocol in use: nothing expires
        for (topic, partition), stored in list(group.offsets.items()):
            if protected and topic in protected:
                continue
            if stored.expire_timestamp_ms is not None:
                expired = now_ms >= stored.expire_timestamp_ms
            else:
                base = (
                    group.current_state_timestamp_ms
                    if base_from_state and group.current_state_timestamp_ms
                    else stored.commit_timestamp_ms
                )
                expired = now_ms - base >= retention
            if expired:
                self.state.apply(result, OffsetCommitRecord(group.group_id, topic, partition, None))
        if empty and not group.offsets:
            for record in tombstones(group):  # the group type's records that delete it
                self.state.apply(result, record)
            result.event(
                EventType.GROUP_DELETED, now_ms, group.group_id, reason=DeleteReason.EXPIRED
            )
        return result


def _validate_consumer_commit(group: ConsumerGroup, cmd: OffsetCommit) -> None:
    """Kafka's `ConsumerGroup.validateOffsetCommit`: the committer must be a member, commit
    with v9+ (members of this protocol do), and carry its current member epoch."""
    member = group.members.get(cmd.member_id)
    if member is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    if member.classic is not None:
        # A classic-protocol member (online migration) commits as in a classic group: any
        # version, its generation is its member epoch.
        if cmd.generation_id != member.member_epoch:
            raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)
        return
    if cmd.version < 9:
        raise CoordinatorError(ErrorCode.UNSUPPORTED_VERSION)
    if cmd.generation_id != member.member_epoch:
        raise CoordinatorError(ErrorCode.STALE_MEMBER_EPOCH)


def _validate_consumer_fetch(group: ConsumerGroup, cmd: OffsetFetch) -> None:
    """Kafka's `ConsumerGroup.validateOffsetFetch` (OffsetFetch v9+): a fetch naming no member
    (member id null, epoch -1: admin clients, classic consumers, librdkafka) is answered; one
    naming a member must name a current member with its current epoch. The error is the
    group's (OffsetFetch v8+ has a per-group error code), no partitions answered.

    A classic group only refuses fetches when Dead, which no live group here is; an unknown
    group answers -1 for every partition (Kafka validates nothing then either)."""
    if cmd.member_id is None and cmd.member_epoch < 0:
        return
    member = group.members.get(cmd.member_id or "")
    if member is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    if cmd.member_epoch != member.member_epoch:
        raise CoordinatorError(ErrorCode.STALE_MEMBER_EPOCH)


def _validate_client_balance_commit(group: ClientBalanceGroup, cmd: OffsetCommit) -> None:
    """A client-balance node commits as itself: its member id and its member epoch in the
    generation field (the partition-level fence is `ClientBalanceGroupType.commit_error`)."""
    node = group.nodes.get(cmd.member_id)
    if node is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    if cmd.generation_id != node.member_epoch:
        raise CoordinatorError(ErrorCode.STALE_MEMBER_EPOCH)


def _fetched(partition: int, stored: OffsetAndMetadata | None) -> FetchedOffset:
    if stored is None:
        return FetchedOffset(partition, -1, -1, "")
    return FetchedOffset(partition, stored.offset, stored.leader_epoch, stored.metadata)
