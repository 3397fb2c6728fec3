"""The record-store contract the group coordinator persists through.

The coordinator core emits records; each is a `StoredRecord(kind, key, value, partition)` where
`kind` names the record type (e.g. group metadata, offset commit), `key` identifies the entity
within that kind, `value` is its serialised latest state, or `None` for a tombstone that deletes
the key, and `partition` the `__consumer_offsets` partition of its group (a store that serves
several nodes keeps and fences rows by it; one that serves a single node may ignore it). A
store keeps only the latest value per (kind, key): it is the compacted view of what Kafka keeps
in `__consumer_offsets`. On start the coordinator replays `load()` to rebuild its state, so
records come back in the order they were last written.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from coordinator.errors import StoreError as StoreError  # raised by every store
from rebalance.quick_init import quick_init

UNPLACED = -1
"""The partition of a row whose partition nobody said (a single-node store does not need it)."""


@quick_init  # one per committed offset
@dataclass(frozen=True, slots=True)
class StoredRecord:
    kind: str
    key: str
    value: bytes | None
    """Serialised state; None is a tombstone (delete the key)."""
    partition: int = UNPLACED
    """The `__consumer_offsets` partition of the record's group."""

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@runtime_checkable
class RecordStore(Protocol):
    async def append(self, records: Sequence[StoredRecord]) -> None:
        """Apply the records atomically; they are durable when this returns."""
        ...

    def append_then(
        self, records: Sequence[StoredRecord], done: Callable[[BaseException | None], None]
    ) -> None:
        """`append` without awaiting it (how the group runtime writes): `done` is called on the
        running loop once the records are durable (with None) or could not be written (with
        the error; `asyncio.CancelledError` if the write was cancelled)."""
        ...

    def load(self, partitions: Collection[int] | None = None) -> Iterator[StoredRecord]:
        """Live records (no tombstones), ordered by their last write, oldest first: at least
        those of `partitions` (all with None). A store that does not keep rows by partition
        returns all; the runtime keeps only the partitions it loads."""
        ...

    def close(self) -> None:
        """Finish pending appends and release the store."""
        ...
