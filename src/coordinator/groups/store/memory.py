"""An in-memory `RecordStore` for tests and benchmarks: same semantics, no durability."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterator, Sequence

from coordinator.groups.store.base import StoredRecord, StoreError


class MemoryStore:
    def __init__(self) -> None:
        # dicts keep insertion order; re-inserting on update makes it last-write order.
        self._records: dict[tuple[str, str], bytes] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"<MemoryStore records={len(self._records)}>"

    async def append(self, records: Sequence[StoredRecord]) -> None:
        if self._closed:
            raise StoreError("memory store is closed")
        for record in records:
            self._records.pop((record.kind, record.key), None)
            if record.value is not None:
                self._records[(record.kind, record.key)] = record.value

    def append_then(
        self, records: Sequence[StoredRecord], done: Callable[[BaseException | None], None]
    ) -> None:
        """`append` on a task of the running loop (so a subclass's `append` is what runs), its
        outcome passed to `done`."""
        write = asyncio.get_running_loop().create_task(self.append(records))
        write.add_done_callback(lambda task: done(_outcome(task)))

    def load(self, partitions: Collection[int] | None = None) -> Iterator[StoredRecord]:
        for (kind, key), value in list(self._records.items()):
            yield StoredRecord(kind, key, value)

    def close(self) -> None:
        self._closed = True


def _outcome(task: asyncio.Task[None]) -> BaseException | None:
    return asyncio.CancelledError() if task.cancelled() else task.exception()
