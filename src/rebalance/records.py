"""What handlers return: records to persist, replies to send, timers to (re)arm or cancel.

A handler never performs I/O. Its `Result` says what must happen:

* `records` must be made durable (in order) *before* any of `replies` is sent: a reply may
  acknowledge state that only the records make durable (Kafka's append-future rule).
* `replies` pair a reply token (supplied by the shell with each request) with a response. A
  result may answer requests parked earlier, e.g. the last JoinGroup of a round answers every
  member's parked JoinGroup.
* `events` describe what happened (member joined, rebalance started, ...) for the event log.
* `timers` are `Schedule(key, deadline_ms)` (replaces any timer with that key) and `Cancel(key)`.
  When a timer fires, the shell calls `on_timer(key, now_ms)` on the same serial lane.

Records are Kafka's `__consumer_offsets` records: group metadata snapshots and offset commits;
a value of None is a tombstone. `replay` is the only way they change state (live and at load).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from rebalance.events import Event
from rebalance.group import OffsetAndMetadata
from rebalance.replies import AnyReply

#: Timer keys are (kind, group id, member id or "") tuples: hashable, nothing to parse back.
TimerKey = tuple[str, str, str]

SESSION = "session"  # a member's heartbeat/session expiry
PENDING = "pending"  # a MEMBER_ID_REQUIRED id that has not joined yet
JOIN = "join"  # rebalance timeout, or the initial rebalance delay
SYNC = "sync"  # members of a new generation that have not sent SyncGroup
RETENTION = "retention"  # periodic offset expiry of one partition (member field: partition)


def session_key(group_id: str, member_id: str) -> TimerKey:
    return (SESSION, group_id, member_id)


def pending_key(group_id: str, member_id: str) -> TimerKey:
    return (PENDING, group_id, member_id)


def join_key(group_id: str) -> TimerKey:
    return (JOIN, group_id, "")


def sync_key(group_id: str) -> TimerKey:
    return (SYNC, group_id, "")


def retention_key(partition: int) -> TimerKey:
    return (RETENTION, "", str(partition))


@dataclass(frozen=True, slots=True)
class Schedule:
    key: TimerKey
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class Cancel:
    key: TimerKey


TimerEffect = Schedule | Cancel


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    """A member as persisted: only the selected protocol's metadata is kept (as in Kafka)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str | None
    generation: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadataValue, ...]


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    group_id: str
    value: GroupMetadataValue | None  # None: tombstone, the group is deleted


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    value: OffsetAndMetadata | None  # None: tombstone, the offset is deleted


Record = GroupMetadataRecord | OffsetCommitRecord


@dataclass(frozen=True, slots=True)
class Reply:
    token: Hashable
    response: AnyReply


@dataclass(slots=True)
class Result:
    """Effects of one handler call, in the order the shell must carry them out."""

    records: list[Record] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    timers: list[TimerEffect] = field(default_factory=list)
    #: What happened, for the event log (see `rebalance.events`); never affects behaviour.
    events: list[Event] = field(default_factory=list)

    def reply(self, token: Hashable, response: AnyReply) -> None:
        self.replies.append(Reply(token, response))

    def event(
        self,
        type: str,
        ts: int,
        group: str | None,
        generation: int | None = None,
        member: str | None = None,
        **fields: Any,
    ) -> None:
        self.events.append(Event(type, ts, group, generation, member, fields))

    def extend(self, other: Result) -> None:
        self.records.extend(other.records)
        self.replies.extend(other.replies)
        self.timers.extend(other.timers)
        self.events.extend(other.events)
