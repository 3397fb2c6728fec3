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
* `offloaded` is work to compute away from the serial lane, `Offload`s of a group type (today
  the target assignments of large consumer groups:
  `rebalance.consumer_group.target.compute_target(inputs)`, pure); the shell hands each result
  back with `target_computed(inputs, computed, now_ms)` on the lane.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rebalance.event_schema import ENUM_FIELDS, EventType
from rebalance.events import Event
from rebalance.quick_init import quick_init
from rebalance.records import Record
from rebalance.timers import TimerKey


class Offload(Protocol):
    """Work of one group to compute off the serial lane (see the module docstring)."""

    @property
    def group_id(self) -> str: ...


@quick_init
@dataclass(frozen=True, slots=True)
class Schedule:
    key: TimerKey
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class Cancel:
    key: TimerKey


TimerEffect = Schedule | Cancel


@quick_init
@dataclass(frozen=True, slots=True)
class Reply:
    token: Hashable
    response: object  # the reply type of the command it answers (`Command[R]`)


@dataclass(slots=True)
class Result:
    """Effects of one handler call, in the order the shell must carry them out."""

    records: list[Record] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    timers: list[TimerEffect] = field(default_factory=list)
    #: What happened, for the event log (see `rebalance.events`); never affects behaviour.
    events: list[Event] = field(default_factory=list)
    #: Target assignments for the shell to compute off the serial lane (see the module doc).
    offloaded: list[Offload] = field(default_factory=list)

    def __init__(
        self,
        records: list[Record] | None = None,
        replies: list[Reply] | None = None,
        timers: list[TimerEffect] | None = None,
        events: list[Event] | None = None,
        offloaded: list[Offload] | None = None,
    ) -> None:
        # The dataclass's own `__init__` calls each field's `default_factory`: twice the cost,
        # for an object every command makes.
        self.records = [] if records is None else records
        self.replies = [] if replies is None else replies
        self.timers = [] if timers is None else timers
        self.events = [] if events is None else events
        self.offloaded = [] if offloaded is None else offloaded

    def reply(self, token: Hashable, response: object) -> None:
        self.replies.append(Reply(token, response))

    def event(
        self,
        type: EventType,
        ts: int,
        group: str | None,
        generation: int | None = None,
        member: str | None = None,
        **fields: Any,
    ) -> None:
        for key in ENUM_FIELDS:
            value = fields.get(key)
            if value is not None:
                # Plain strings from here on: the log writer's channel (marshal) and every
                # reader of the line see the value, not our enum.
                fields[key] = str(value)
        self.events.append(Event(type, ts, group, generation, member, fields))

    def offload(self, inputs: Offload) -> None:
        self.offloaded.append(inputs)

    def extend(self, other: Result) -> None:
        self.records.extend(other.records)
        self.replies.extend(other.replies)
        self.timers.extend(other.timers)
        self.events.extend(other.events)
        self.offloaded.extend(other.offloaded)


def single_reply(token: Hashable, response: object) -> Result:
    """A result that only answers one request."""
    result = Result()
    result.reply(token, response)
    return result
