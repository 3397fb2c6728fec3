"""Test support for the core, for our tests and for users': a manual clock and timer, and a
harness that drives groups the way real clients would (Kafka's GroupMetadataManagerTestContext,
h11's ConnectionPair).

The harness owns a `GroupCoordinatorCore` with every `__consumer_offsets` partition loaded, feeds
it commands with fresh reply tokens, carries out the timer effects on a `ManualTimer`, collects
every record and reply, and checks that no request is ever answered twice. Time moves only with
`advance(ms)`, which fires due timers in deadline order, each at its own deadline.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assignors.consumer_protocol import Subscription, encode_subscription
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, LeavingMember, SyncGroup
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    SyncGroupReply,
)
from rebalance.commands import Command, CommitPartition, CommitTopic, OffsetCommit, OffsetFetch
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.target import TargetInputs, compute_target
from rebalance.core import GroupCoordinatorCore
from rebalance.effects import Cancel, Result, TimerEffect
from rebalance.errors import ErrorCode
from rebalance.events import Event
from rebalance.records import Record
from rebalance.registry import GROUP_TYPES, GroupTypeFactory
from rebalance.replies import OffsetCommitReply, OffsetFetchReply
from rebalance.rng import SplitMix64
from rebalance.timers import TimerKey
from rebalance.topics import TopicMetadata


class ManualClock:
    """A clock that moves only when told to."""

    __slots__ = ("_now",)

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._now += ms
        return self._now

    def set(self, now_ms: int) -> None:
        if now_ms < self._now:
            raise ValueError("time does not go backwards")
        self._now = now_ms


class ManualTimer:
    """Timers by key, as Kafka's MockCoordinatorTimer: scheduling a key replaces it.

    A heap ordered by (deadline, arming order) plus a key -> live entry map; replaced or
    cancelled entries stay in the heap and are skipped when popped.
    """

    __slots__ = ("_armed", "_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._armed: dict[TimerKey, tuple[int, int]] = {}
        self._seq = itertools.count()

    def apply(self, effects: Iterable[TimerEffect]) -> None:
        for effect in effects:
            if isinstance(effect, Cancel):
                self._armed.pop(effect.key, None)
            else:
                entry = (effect.deadline_ms, next(self._seq))
                self._armed[effect.key] = entry
                heapq.heappush(self._heap, (*entry, effect.key))

    def pop_due(self, now_ms: int) -> tuple[TimerKey, int] | None:
        """The earliest live timer with deadline <= now, removed; None if there is none."""
        while self._heap and self._heap[0][0] <= now_ms:
            deadline, seq, key = heapq.heappop(self._heap)
            if self._armed.get(key) == (deadline, seq):
                del self._armed[key]
                return key, deadline
        return None

    def deadline(self, key: TimerKey) -> int | None:
        entry = self._armed.get(key)
        return None if entry is None else entry[0]

    def next_deadline(self) -> int | None:
        return min((d for d, _ in self._armed.values()), default=None)

    def entries(self) -> dict[TimerKey, tuple[int, int]]:
        """Every live timer: key -> (deadline, arming order); a re-armed key has a new order."""
        return dict(self._armed)

    def __len__(self) -> int:
        return len(self._armed)


class AnsweredTwice(AssertionError):
    """The core answered one request twice: a protocol bug."""


@dataclass
class GroupHarness:
    """Drive one coordinator core with a manual clock; see the module docstring."""

    config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    seed: int = 0
    clock: ManualClock = field(default_factory=ManualClock)
    timer: ManualTimer = field(default_factory=ManualTimer)
    #: The group types the core holds (`rebalance.registry`'s unless a test adds its own).
    group_types: Sequence[GroupTypeFactory] = GROUP_TYPES

    def __post_init__(self) -> None:
        self.core = GroupCoordinatorCore(self.config, SplitMix64(self.seed), self.group_types)
        self.records: list[Record] = []
        self.events: list[Event] = []
        #: Each token's reply, of the type its command declares (`Command[R]`).
        self.replies: dict[Hashable, Any] = {}
        self.fired: list[TimerKey] = []
        #: Offloaded target assignments not yet handed back (`hold_offloaded`).
        self.offloaded: list[TargetInputs] = []
        #: False: an offloaded target is computed and handed back at once, as if by a worker
        #: that is never slow; True: they wait in `offloaded` for `deliver_offloaded`.
        self.hold_offloaded = False
        #: The topics last told to the core (`topics_changed`); a failover tells the new core.
        self.metadata: TopicMetadata | None = None
        self._next_token = 0
        for partition in range(self.config.offsets_topic_num_partitions):
            self._absorb(self.core.load(partition, (), self.clock.now_ms()))

    # -- plumbing ------------------------------------------------------------------------
    def _absorb(self, result: Result) -> Result:
        self.records.extend(result.records)
        self.events.extend(result.events)
        for reply in result.replies:
            if reply.token in self.replies:
                raise AnsweredTwice(f"token {reply.token!r}: {reply.response!r}")
            self.replies[reply.token] = reply.response
        self.timer.apply(result.timers)
        for inputs in result.offloaded:
            assert isinstance(inputs, TargetInputs)  # the only work offloaded today
            self.offloaded.append(inputs)
        if not self.hold_offloaded:
            self.deliver_offloaded()
        return result

    def deliver_offloaded(self) -> None:
        """Compute the held target assignments and hand them back, oldest first."""
        while self.offloaded:
            inputs = self.offloaded.pop(0)
            computed = compute_target(inputs)
            self._absorb(self.core.target_computed(inputs, computed, self.clock.now_ms()))

    def send(self, command: Command[Any]) -> int:
        """Submit a command; returns its reply token (see `reply`)."""
        self._next_token += 1
        token = self._next_token
        self._absorb(self.core.handle(command, self.clock.now_ms(), token))
        return token

    def reply(self, token: int) -> Any | None:
        """The reply to `token`, or None while the request is parked."""
        return self.replies.get(token)

    def advance(self, ms: int) -> list[TimerKey]:
        """Move time forward, firing due timers in deadline order at their deadlines."""
        target = self.clock.now_ms() + ms
        fired: list[TimerKey] = []
        while (due := self.timer.pop_due(target)) is not None:
            key, deadline = due
            self.clock.set(max(deadline, self.clock.now_ms()))
            self._absorb(self.core.on_timer(key, self.clock.now_ms()))
            fired.append(key)
        self.clock.set(target)
        self.fired.extend(fired)
        return fired

    def run_until(self, done: Callable[[], bool], limit: int = 1000) -> None:
        """Fire timers one deadline at a time until `done()` holds."""
        for _ in range(limit):
            if done():
                return
            deadline = self.timer.next_deadline()
            if deadline is None:
                break
            self.advance(max(deadline - self.clock.now_ms(), 0))
        if not done():
            raise AssertionError("condition not reached: no timer left to fire")

    def topics_changed(self, metadata: TopicMetadata) -> None:
        """Tell the core the cluster's topics (consumer groups assign their partitions)."""
        self.metadata = metadata
        self._absorb(self.core.topics_changed(metadata, self.clock.now_ms()))

    def unload(self, partition: int) -> None:
        """Stop owning `partition` (spec §4): parked requests are answered NOT_COORDINATOR."""
        self._absorb(self.core.unload(partition, self.clock.now_ms()))

    def failover(self, config: CoordinatorConfig | None = None) -> None:
        """Unload every partition, then load them on a fresh core from the records written so far.

        This is a coordinator move (spec §4): parked requests are answered NOT_COORDINATOR by the
        unload, in-flight rebalances are lost, and the new core sees only the durable records. A
        core that was told the topics learns them first, as the shell tells a loaded core.
        """
        partitions = range(self.config.offsets_topic_num_partitions)
        for partition in partitions:
            self._absorb(self.core.unload(partition, self.clock.now_ms()))
        if config is not None:
            self.config = config
        self.core = GroupCoordinatorCore(self.config, SplitMix64(self.seed + 1), self.group_types)
        self.timer = ManualTimer()
        if self.metadata is not None:
            self._absorb(self.core.topics_changed(self.metadata, self.clock.now_ms()))
        records = list(self.records)
        for partition in partitions:
            mine = [r for r in records if self.core.partition_for(r.group_id) == partition]
            self._absorb(self.core.load(partition, mine, self.clock.now_ms()))

    def parked(self) -> set[Hashable]:
        """Tokens of requests the core still holds."""
        held: set[Hashable] = set()
        for group in self.core.groups().values():
            for m in group.members.values():
                if m.join_token is not None:
                    held.add(m.join_token)
                if m.sync_token is not None:
                    held.add(m.sync_token)
        return held

    # -- typed helpers ---------------------------------------------------------------------
    def join(
        self,
        group_id: str,
        member_id: str = "",
        *,
        protocols: tuple[tuple[str, bytes], ...] = (("range", b"meta"),),
        protocol_type: str = "consumer",
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
        instance_id: str | None = None,
        client_id: str = "client",
        version: int = 9,
    ) -> int:
        return self.send(
            JoinGroup(
                group_id=group_id,
                member_id=member_id,
                protocol_type=protocol_type,
                protocols=protocols,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                group_instance_id=instance_id,
                client_id=client_id,
                version=version,
            )
        )

    def join_reply(self, token: int) -> JoinGroupReply:
        reply = self.replies.get(token)
        assert isinstance(reply, JoinGroupReply), f"join {token} not answered: {reply!r}"
        return reply

    def new_member(self, group_id: str, **kwargs: object) -> tuple[str, int]:
        """The KIP-394 two-step join: returns the member id and the parked join's token."""
        first = self.join_reply(self.join(group_id, **kwargs))  # type: ignore[arg-type]
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED, first
        return first.member_id, self.join(group_id, first.member_id, **kwargs)  # type: ignore[arg-type]

    def sync(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance_id: str | None = None,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
        version: int = 5,
    ) -> int:
        return self.send(
            SyncGroup(
                group_id=group_id,
                generation_id=generation,
                member_id=member_id,
                assignments=tuple((assignments or {}).items()),
                group_instance_id=instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                version=version,
            )
        )

    def sync_reply(self, token: int) -> SyncGroupReply:
        reply = self.replies.get(token)
        assert isinstance(reply, SyncGroupReply), f"sync {token} not answered: {reply!r}"
        return reply

    def heartbeat(
        self, group_id: str, member_id: str, generation: int, instance_id: str | None = None
    ) -> ErrorCode:
        token = self.send(Heartbeat(group_id, generation, member_id, instance_id))
        reply = self.replies[token]
        assert isinstance(reply, HeartbeatReply)
        return reply.error

    def leave(
        self, group_id: str, *members: LeavingMember | str, version: int = 5
    ) -> LeaveGroupReply:
        leaving = tuple(m if isinstance(m, LeavingMember) else LeavingMember(m) for m in members)
        token = self.send(LeaveGroup(group_id, leaving, version))
        reply = self.replies[token]
        assert isinstance(reply, LeaveGroupReply)
        return reply

    def commit(
        self,
        group_id: str,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        instance_id: str | None = None,
        metadata: str = "",
        version: int = 8,
    ) -> dict[tuple[str, int], ErrorCode]:
        by_topic: dict[str, list[CommitPartition]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(
                CommitPartition(partition, offset, metadata=metadata)
            )
        token = self.send(
            OffsetCommit(
                group_id=group_id,
                topics=tuple(CommitTopic(t, tuple(ps)) for t, ps in by_topic.items()),
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance_id,
                version=version,
            )
        )
        reply = self.replies[token]
        assert isinstance(reply, OffsetCommitReply)
        return {(t, p): code for t, parts in reply.topics for p, code in parts}

    def committed(self, group_id: str, *partitions: tuple[str, int]) -> dict[tuple[str, int], int]:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        token = self.send(
            OffsetFetch(group_id, tuple((t, tuple(ps)) for t, ps in by_topic.items()))
        )
        reply = self.replies[token]
        assert isinstance(reply, OffsetFetchReply)
        return {(t, f.partition): f.offset for t, found in reply.topics for f in found}

    def form_group(
        self, group_id: str, n: int, *, instance_ids: Iterable[str] = (), **kwargs: object
    ) -> tuple[list[str], int]:
        """Join `n` dynamic members (plus one static member per `instance_ids`, which join in
        one step), let the initial delay pass, sync everyone.

        Returns (member ids with the leader first, generation).
        """
        tokens: dict[str, int] = {}
        for instance_id in instance_ids:
            token = self.join(group_id, instance_id=instance_id, **kwargs)  # type: ignore[arg-type]
            tokens[f"static:{instance_id}"] = token
        for _ in range(n):
            member_id, token = self.new_member(group_id, **kwargs)
            tokens[member_id] = token
        self.run_until(lambda: all(t in self.replies for t in tokens.values()))
        replies = {self.join_reply(t).member_id: self.join_reply(t) for t in tokens.values()}
        leader = next(iter(replies.values())).leader
        generation = replies[leader].generation_id
        assignments = {m: m.encode() for m in replies}
        ptype, pname = replies[leader].protocol_type, replies[leader].protocol_name
        sync_tokens = [
            self.sync(
                group_id,
                m,
                generation,
                assignments if m == leader else None,
                protocol_type=ptype,
                protocol_name=pname,
            )
            for m in [leader, *[m for m in replies if m != leader]]
        ]
        for token in sync_tokens:
            assert self.sync_reply(token).error is ErrorCode.NONE
        return [leader, *[m for m in replies if m != leader]], generation


def consumer_subscription(*topics: str, version: int = 0) -> bytes:
    """A ConsumerProtocol Subscription (of `version`) naming `topics`, as member metadata."""
    return encode_subscription(Subscription(tuple(topics)), version)
