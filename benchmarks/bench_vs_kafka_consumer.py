"""KIP-848 members for `bench_vs_kafka.py`: a consumer group formed by ConsumerGroupHeartbeat
(v1, member ids chosen by the members), each member acting as Kafka's consumer does: it
heartbeats at the interval the coordinator answers with, at once after an answer that changed
its assignment (it takes the new one, giving up what was taken away, and says what it owns),
and leaves with epoch -1.

The group has converged when every member is at one member epoch, the members' assignments
together cover every partition of the topic (none waits for its release) and each member holds
its even share (floor or ceiling of partitions / members, as `uniform` and `range` give equal
subscriptions): a member not yet in the target is also moved to the target's epoch, with nothing
assigned. A ConsumerGroupDescribe afterwards checks the coordinator agrees (Stable, every member
at the group epoch).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import uuid
from typing import Any

from bench_groups import Conn
from coordinator.wire.api_keys import ApiKey

HEARTBEAT_VERSION = 1
DESCRIBE_VERSION = 1
ANSWER_TIMEOUT_S = 30.0


class ConsumerGroup:
    """`members` consumers of `group` subscribed to `topic` (of `partitions`), one connection
    each, run by `start` until `stop`; `converged()` waits for the group as the docstring says."""

    def __init__(self, port: int, group: str, topic: str, partitions: int) -> None:
        self.port, self.group, self.topic, self.partitions = port, group, topic, partitions
        self._owned: dict[str, tuple[int, ...]] = {}
        self._epochs: dict[str, int] = {}
        self._at_epoch: collections.Counter[int] = collections.Counter()
        self._owned_total = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._connected: list[Conn] = []
        self._converged_at = 0.0
        self._changed = asyncio.Event()
        self._stopping = False
        self.heartbeats = 0

    async def connect(self, count: int) -> None:
        """Open the connections of `count` more members (`start` sends their joins)."""
        self._connected = [await Conn.open(self.port) for _ in range(count)]

    def start(self) -> float:
        """The connected members join, all at once; perf_counter time just before."""
        started = time.perf_counter()
        for conn in self._connected:
            self._tasks.append(asyncio.create_task(self._run(conn, str(uuid.uuid4()))))
        self._connected = []
        return started

    async def converged(self, timeout: float = 120.0) -> float:
        """Wait until converged; perf_counter time of the answer that made it so."""
        deadline = time.monotonic() + timeout
        while not self._is_converged():
            for task in self._tasks:
                if task.done() and task.exception() is not None:
                    raise RuntimeError(f"a member failed: {task.exception()}")
            self._changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(
                    f"group {self.group} did not converge in {timeout:.0f} s: epochs "
                    f"{dict(self._at_epoch)}, {self._owned_total}/{self.partitions} owned"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(left, 1.0))
        return self._converged_at

    def _is_converged(self) -> bool:
        members = len(self._tasks)
        epoch, count = max(self._at_epoch.items(), default=(0, 0))
        if not (
            count == members and epoch > 0 and len(self._epochs) == members
            and self._owned_total == self.partitions
        ):  # fmt: skip
            return False
        least = self.partitions // members
        return all(least <= len(owned) <= least + 1 for owned in self._owned.values())

    async def _run(self, conn: Conn, member: str) -> None:
        values: dict[str, Any] = {
            "group_id": self.group, "member_id": member, "member_epoch": 0,
            "rebalance_timeout": 30_000, "subscribed_topic_names": [self.topic],
            "topic_partitions": [],
        }  # fmt: skip
        owned: tuple[int, ...] = ()
        while not self._stopping:
            reply = await asyncio.wait_for(
                conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, HEARTBEAT_VERSION, values),
                ANSWER_TIMEOUT_S,
            )
            self.heartbeats += 1
            if reply.error_code:
                raise RuntimeError(f"ConsumerGroupHeartbeat answered {reply.error_code!r}")
            changed = reply.assignment is not None
            if changed:
                owned = tuple(p for t in reply.assignment.topic_partitions for p in t.partitions)
                topic_ids = [t.topic_id for t in reply.assignment.topic_partitions]
            self._record(member, reply.member_epoch, owned)
            values = {
                "group_id": self.group, "member_id": member, "member_epoch": reply.member_epoch,
                "rebalance_timeout": 30_000, "subscribed_topic_names": None,
                "topic_partitions": (
                    [{"topic_id": topic_ids[0], "partitions": list(owned)}] if owned else []
                ) if changed else None,
            }  # fmt: skip
            if not changed:
                await asyncio.sleep(reply.heartbeat_interval.total_seconds())
        leave = {"group_id": self.group, "member_id": member, "member_epoch": -1}
        await conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, HEARTBEAT_VERSION, leave)
        conn.close()

    def _record(self, member: str, epoch: int, owned: tuple[int, ...]) -> None:
        before = self._epochs.get(member)
        if before is not None:
            self._at_epoch[before] -= 1
        self._epochs[member] = epoch
        self._at_epoch[epoch] += 1
        self._owned_total += len(owned) - len(self._owned.get(member, ()))
        self._owned[member] = owned
        if self._is_converged():
            self._converged_at = time.perf_counter()
        self._changed.set()

    async def describe(self) -> tuple[str, int, int, set[int]]:
        """The coordinator's view: state, group epoch, assignment epoch, members' epochs."""
        conn = await Conn.open(self.port)
        try:
            reply = await conn.call(
                ApiKey.CONSUMER_GROUP_DESCRIBE, DESCRIBE_VERSION,
                {"group_ids": [self.group], "include_authorized_operations": False},
            )  # fmt: skip
        finally:
            conn.close()
        group = reply.groups[0]
        if group.error_code:
            raise RuntimeError(f"ConsumerGroupDescribe answered {group.error_code!r}")
        epochs = {m.member_epoch for m in group.members}
        if len(group.members) != len(self._tasks):
            raise RuntimeError(f"{len(group.members)} members described, {len(self._tasks)} run")
        return group.group_state, group.group_epoch, group.assignment_epoch, epochs

    async def stop(self) -> None:
        """Every member leaves (epoch -1, after its current wait) and closes its connection."""
        self._stopping = True
        await asyncio.gather(*self._tasks)
