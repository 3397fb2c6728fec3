"""An unmodified aiokafka consumer fetching what a `GroupMember` owns: incremental rebalancing
(KIP-429 cooperative, or KIP-848) for aiokafka users.

aiokafka's own group membership is eager only: every rebalance stops every member. Here the
consumer has no group of its own (`group_id=None`, manual assignment); a `GroupMember` holds the
membership, and its callbacks move aiokafka's assignment:

* `on_assigned`: the new partitions are added to the consumer's assignment and each is positioned
  at the group's committed offset (none committed: `auto_offset_reset`, earliest or latest);
* `on_revoked`: the consumed positions of the revoked partitions are committed (fenced by the
  generation or epoch that gave them), then they leave the assignment; the protocol goes on only
  after that;
* `on_lost`: they leave the assignment, nothing is committed (another member may own them).

`getmany()` returns only records of partitions the member owns at that instant; `commit()`
commits the positions consumed so far. Records are processed at least once: a member that
crashes or loses its partitions before committing leaves them to be read again by the next
owner (from the last commit); with clean hand-overs (revocation) nothing is read twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from assignors.spec import TopicPartition
from coordinator.clients.member.group_member import GroupMember


class IncrementalConsumer:
    """`consumer` (an AIOKafkaConsumer created without group_id) driven by a GroupMember."""

    def __init__(
        self,
        consumer: Any,
        bootstrap_servers: str | Sequence[str],
        group_id: str,
        topics: Iterable[str],
        *,
        auto_offset_reset: str = "earliest",
        **member_options: Any,
    ) -> None:
        if getattr(consumer, "_group_id", None) is not None:
            raise ValueError("create the AIOKafkaConsumer without group_id: the member holds it")
        if auto_offset_reset not in ("earliest", "latest"):
            raise ValueError("auto_offset_reset must be 'earliest' or 'latest'")
        self.consumer = consumer
        self.member = GroupMember(
            bootstrap_servers,
            group_id,
            topics,
            on_assigned=self._on_assigned,
            on_revoked=self._on_revoked,
            on_lost=self._on_lost,
            **member_options,
        )
        self._reset = auto_offset_reset
        self._assigned: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int] = {}

    async def __aenter__(self) -> IncrementalConsumer:
        await self.consumer.start()
        self.member.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.member.close()
        finally:
            await self.consumer.stop()

    def owned(self) -> frozenset[TopicPartition]:
        return self.member.owned()

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, Any]:
        """Records of partitions owned now, as aiokafka's getmany returns them."""
        if not self._assigned:
            import asyncio

            await asyncio.sleep(timeout_ms / 1000)
            return {}
        batch = await self.consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        owned = self.member.owned()
        out: dict[Any, Any] = {}
        for tp, records in batch.items():
            key = (tp.topic, tp.partition)
            if key in owned and records:
                out[tp] = records
                self._positions[key] = records[-1].offset + 1
        return out

    async def commit(self) -> None:
        """Commit the consumed positions of the partitions owned now."""
        owned = self.member.owned()
        offsets = {tp: offset for tp, offset in self._positions.items() if tp in owned}
        if offsets:
            await self.member.commit(offsets)

    # -- the member's callbacks -------------------------------------------------------------

    async def _on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        if not partitions:
            return
        committed = await self.member.committed(partitions)
        self._assigned |= partitions
        self._apply()
        for tp in partitions:
            offset = committed.get(tp)
            structure = self._tp(tp)
            if offset is not None:
                self.consumer.seek(structure, offset)
                self._positions[tp] = offset
            elif self._reset == "earliest":
                await self.consumer.seek_to_beginning(structure)
            else:
                await self.consumer.seek_to_end(structure)
        for tp in self._assigned - partitions:
            if tp in self._positions:
                self.consumer.seek(self._tp(tp), self._positions[tp])

    async def _on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        offsets = {tp: o for tp, o in self._positions.items() if tp in partitions}
        if offsets:
            await self.member.commit(offsets)
        self._drop(partitions)

    async def _on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._drop(partitions)

    def _drop(self, partitions: frozenset[TopicPartition]) -> None:
        self._assigned -= partitions
        for tp in partitions:
            self._positions.pop(tp, None)
        self._apply()
        for tp in self._assigned:
            if tp in self._positions:
                self.consumer.seek(self._tp(tp), self._positions[tp])

    def _apply(self) -> None:
        self.consumer.assign([self._tp(tp) for tp in sorted(self._assigned)])

    @staticmethod
    def _tp(tp: TopicPartition) -> Any:
        from aiokafka.structs import TopicPartition as AiokafkaTopicPartition

        return AiokafkaTopicPartition(*tp)
