"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (Kafka's `OffsetMetadataManager`).

What a group's type decides is asked of it, as Kafka asks its `Group`: who may commit
(`GroupType.validate_offset_commit`, spec §3.1, with a per-partition fence for types that have
one), who may fetch (`validate_offset_fetch`) and which topics the members consume
(`subscribed_topics`: their offsets neither expire nor may be deleted). A commit to an unknown
group with generation -1 creates a "simple" group. Accepted offsets become records; `replay`
stores them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from rebalance.commands import OffsetCommit, OffsetDelete, OffsetFetch
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
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE


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
        group = self.state.groups.get(cmd.group_id)
        group_type = self.state.type_of(group) if group is not None else None
        # Some types' commits say so in the event log (consumer groups); classic ones do not.
        typed = (
            {"group_type": group_type.name}
            if group_type is not None and group_type.typed_commit_events
            else {}
        )
        try:
            if group_type is not None:
                fence = group_type.validate_offset_commit(result, group, cmd, now_ms)
            else:
                fence = None
                if cmd.generation_id >= 0:  # else a simple group: its first offset creates it
                    raise CoordinatorError(
                        ErrorCode.GROUP_ID_NOT_FOUND
                        if cmd.version >= 9
                        else ErrorCode.ILLEGAL_GENERATION
                    )
        except CoordinatorError as exc:
            return self._refused(result, cmd, exc, now_ms, token, typed)
        limit = self.state.config.offset_metadata_max_bytes
        expire = (
            now_ms + cmd.retention_time_ms
            if 2 <= cmd.version <= 4 and cmd.retention_time_ms != -1
            else None
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
                # Kafka's order: the metadata's size, then the partition's fence.
                if len(metadata) > half_limit and _java_length(metadata) > limit:
                    outcomes.append((p.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                    continue
                if fence is not None:
                    try:
                        error = fence(name, p.partition)
                    except CoordinatorError as exc:  # Kafka's validator throws: nothing written
                        return self._refused(result, cmd, exc, now_ms, token, typed)
                    if error is not ErrorCode.NONE:
                        outcomes.append((p.partition, error))
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
            partitions=len(records),
            **typed,
        )
        return result

    @staticmethod
    def _refused(
        result: Result,
        cmd: OffsetCommit,
        exc: CoordinatorError,
        now_ms: int,
        token: Hashable,
        typed: dict[str, str],
    ) -> Result:
        """The whole commit refused with `exc`'s code, every partition answering it."""
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

    # ========================================================================= OffsetFetch
    def fetch(self, cmd: OffsetFetch, token: Hashable) -> Result:
        result = Result()
        group = self.state.groups.get(cmd.group_id)
        if group is not None:
            # A classic group only refuses fetches when Dead, which no live group here is; an
            # unknown group answers -1 for every partition (Kafka validates nothing then either).
            try:
                self.state.type_of(group).validate_offset_fetch(group, cmd)
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
        subscribed = self.state.type_of(group).subscribed_topics(group) if group.members else set()
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
    def forget_topics(self, group: Any, topics: frozenset[str]) -> Result:
        """Drop the group's offsets of deleted topics (Kafka's `onPartitionsDeleted`); an empty
        group left with no offsets is removed by the next retention check, as in Kafka."""
        result = Result()
        for topic, partition in sorted(group.offsets):
            if topic in topics:
                self.state.apply(result, OffsetCommitRecord(group.group_id, topic, partition, None))
        return result

    # ============================================================================= expiry
    def expire(self, group: Any, now_ms: int, tombstones: Callable[[Any], list[Record]]) -> Result:
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
            and (protected := self.state.type_of(group).subscribed_topics(group)) is not None
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


def _fetched(partition: int, stored: OffsetAndMetadata | None) -> FetchedOffset:
    if stored is None:
        return FetchedOffset(partition, -1, -1, "")
    return FetchedOffset(partition, stored.offset, stored.leader_epoch, stored.metadata)
