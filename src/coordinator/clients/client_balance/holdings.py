"""The partitions a client-balance node has registered, in the round-robin order its batches are
handed out in: a batch booked from a partition's buffer, then confirmed (the partition moves past
it) or not (the same records come again)."""

from __future__ import annotations

import asyncio
import contextlib

from coordinator.clients.client_balance.errors import ClientBalanceError
from coordinator.clients.client_balance.partitions import ConsumeResult, OffsetInfo, PartitionState
from rebalance.errors import ErrorCode


def _now_ms() -> int:
    return int(asyncio.get_running_loop().time() * 1000)


class Holdings:
    """Partition key -> its state, in round-robin order; `changed` is set at every registration,
    drop and confirm."""

    def __init__(self) -> None:
        self.parts: dict[str, PartitionState] = {}
        self._order: list[str] = []
        self.changed = asyncio.Event()

    def add(self, key: str, part: PartitionState) -> None:
        self.parts[key] = part
        self._order.append(key)
        self.changed.set()

    def drop(self, key: str) -> None:
        if self.parts.pop(key, None) is not None:
            self._order.remove(key)
            self.changed.set()

    def drop_all(self) -> None:
        for key in list(self.parts):
            self.drop(key)

    def idle(self) -> list[str]:
        """The partitions with no batch out, in round-robin order."""
        return [k for k in self._order if self.parts[k].booked is None]

    def book(self, key: str, max_records: int) -> ConsumeResult:
        """Hand out up to `max_records` of `key`'s buffer (not empty) as one batch."""
        part = self.parts[key]
        batch = part.buffer[:max_records]
        del part.buffer[: len(batch)]
        part.booked = f"{key}:{_now_ms()}"
        part.booked_end = batch[-1].offset + 1
        # Round robin: the partition just served goes to the back.
        self._order.remove(key)
        self._order.append(key)
        return ConsumeResult(
            part.topic, key, part.booked, tuple(batch), part.position, part.max_offset
        )

    def confirm(self, context: str, consumed: bool) -> PartitionState:
        """End the batch of `context`: consumed moves its partition past it, not consumed makes
        the same records come again. Raises `ClientBalanceError` (BAD_REQUEST) for a context
        that is not the batch out."""
        key = context.rsplit(":", 1)[0]
        part = self.parts.get(key)
        if part is None or part.booked != context:
            raise ClientBalanceError(ErrorCode.BAD_REQUEST, f"confirm context {context} is stale")
        part.booked = None
        self.changed.set()
        if not consumed:
            part.buffer.clear()
            part.fetch_position = part.position
        else:
            part.position = part.booked_end
            part.update_time_ms = _now_ms()
        return part

    def offsets(self) -> dict[str, OffsetInfo]:
        return {
            key: OffsetInfo(p.position, p.max_offset, p.update_time_ms)
            for key, p in self.parts.items()
        }

    async def wait_changed(self, timeout_s: float) -> None:
        """Until the next change, or `timeout_s`."""
        self.changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self.changed.wait()
