"""One partition's log: a single append-only file of v2 record batches plus an in-memory index.

Why a plain file and not SQLite: a partition log is write-once, read-sequentially data whose
unit (the record batch) already carries its own length and CRC, so the file is self-delimiting
and self-checking; Fetch serves whole batches with one `pread` of a contiguous byte range, and
no per-record row or blob copy is needed. The index (base offset, file position, size, max
timestamp per batch) is rebuilt by scanning the file when the log opens. That scan is also the
crash-recovery pass, so a persisted index would only add a second file needing its own repair.
There is one segment per partition and no retention: the log grows until the topic is deleted,
which suits a coordinator test/dev broker, not bulk data. DeleteRecords moves the log start
offset (kept in `<partition>.start`, written atomically, with a CRC: `partition_log.sealed`):
offsets below it are out of range for Fetch and ListOffsets, as in Kafka, but the bytes stay
in the file (Kafka, too, frees space only when a whole segment falls below the log start; we
have one segment).

Durability: `append` writes the batches (with server-assigned base offsets) and `flush` fsyncs
them; the high watermark only moves past data that has been fsynced, so a consumer never sees a
record that a crash could take back.

Storage failures (disk full, I/O error): a failed `write` cuts the file back to its previous end
and raises; a failed `fsync` rolls the log back to its durable end (the high watermark), so the
data no caller was told is durable is gone from file, index and producer state alike, and raises
too. Every append since then belongs to an older `generation`, and its `flush` raises as well:
it cannot be acknowledged, even if a later fsync succeeds. The log stays open and serves the
next append as soon as the disk takes writes again, without a restart.

Recovery: scanning (`coordinator.partition_log.recovery`) stops at the first batch that is
incomplete, fails its CRC or breaks the offset sequence, and looks past it. If no intact batch
follows (a write torn by a crash), the tail is truncated with a warning. If one does, the file
is corrupt in the middle and `LogCorruptError` is raised rather than dropping records that may
be valid; `rebalance repair` reports such damage and, when asked, cuts the file there after
keeping a copy (`coordinator.cli.repair`).
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from coordinator.errors import OperationalError
from coordinator.partition_log.batch import BatchInfo, with_base_offset
from coordinator.partition_log.recovery import scan_log
from coordinator.partition_log.sealed import DamagedFileError, seal_number, unseal_number

logger = logging.getLogger("coordinator.partition_log")


class LogCorruptError(OperationalError):
    """A partition file is damaged before its tail; it is left untouched for inspection (and
    for `rebalance repair`, see `coordinator.cli.repair`)."""


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new content, fsynced."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class OffsetOutOfRangeError(ValueError):
    """A fetch asked for an offset outside [log start, high watermark]."""


@dataclass(frozen=True, slots=True)
class IndexEntry:
    base_offset: int
    last_offset: int
    position: int
    size: int
    max_timestamp: int


class ProducerBatches:
    """The last batches of each idempotent producer, to recognise retried batches.

    Like Kafka, the last 5 batches per producer id are remembered (clients have at most 5
    requests in flight per connection when idempotent). Rebuilt from the log on restart.
    """

    REMEMBERED = 5

    def __init__(self) -> None:
        self._recent: dict[int, deque[BatchInfo]] = {}

    def record(self, info: BatchInfo) -> None:
        if info.producer_id < 0 or info.base_sequence < 0:
            return
        recent = self._recent.setdefault(info.producer_id, deque(maxlen=self.REMEMBERED))
        if recent and recent[-1].producer_epoch != info.producer_epoch:
            recent.clear()
        recent.append(info)

    def duplicate_of(self, info: BatchInfo) -> int | None:
        """Base offset of the stored copy of this batch, if it was already written."""
        if info.producer_id < 0 or info.base_sequence < 0:
            return None
        for seen in self._recent.get(info.producer_id, ()):
            if (
                seen.producer_epoch == info.producer_epoch
                and seen.base_sequence == info.base_sequence
                and seen.last_offset_delta == info.last_offset_delta
            ):
                return seen.base_offset
        return None


class PartitionLog:
    """The append-only log of one topic partition."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._start_path = path.with_suffix(".start")
        self._log_start_offset = 0
        self._index: list[IndexEntry] = []
        self._last_offsets: list[int] = []
        self._fd = -1
        self._end_position = 0
        self._log_end_offset = 0
        self._high_watermark = 0
        self._producers = ProducerBatches()
        #: Incremented by each roll-back: an append of an older generation was discarded.
        self.generation = 0
        self._open()

    def __repr__(self) -> str:
        return (
            f"<PartitionLog {self.path.name} batches={len(self._index)} "
            f"hw={self._high_watermark} leo={self._log_end_offset}>"
        )

    @property
    def log_start_offset(self) -> int:
        """The first offset a consumer may read: 0, or where DeleteRecords last moved it."""
        return self._log_start_offset

    def advance_log_start(self, offset: int) -> int:
        """Move the log start offset up to `offset` (never back, never past the high watermark)
        durably; returns the log start offset now in force."""
        if not self._log_start_offset <= offset <= self._high_watermark:
            if offset < self._log_start_offset:
                return self._log_start_offset
            raise OffsetOutOfRangeError(
                f"offset {offset} is above the high watermark {self._high_watermark}"
            )
        if offset > self._log_start_offset:
            write_atomically(self._start_path, seal_number(offset))
            self._log_start_offset = offset
        return self._log_start_offset

    @property
    def size_bytes(self) -> int:
        """The bytes of record batches this log holds (what DescribeLogDirs reports)."""
        return self._end_position

    @property
    def high_watermark(self) -> int:
        """One past the last durable offset; Fetch never serves beyond it."""
        return self._high_watermark

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._recover()
        self._high_watermark = self._log_end_offset
        self._log_start_offset = self._read_log_start()

    def _read_log_start(self) -> int:
        try:
            raw = self._start_path.read_bytes()
        except FileNotFoundError:
            return 0
        try:
            offset = unseal_number(raw)
        except DamagedFileError as exc:
            # Not a LogCorruptError: `rebalance repair` mends partition logs, not this file.
            raise OperationalError(
                f"{self._start_path}: unreadable log start offset ({exc}); restore it from a "
                f"backup, or delete it to read the partition from offset 0 again"
            ) from None
        # A log cut back by recovery cannot start past its end.
        return max(0, min(offset, self._log_end_offset))

    def _recover(self) -> None:
        scan = scan_log(self._fd)
        for info, position in scan.batches:
            self._add_entry(info, position)
        self._end_position = scan.valid_end
        damage = scan.damage
        if damage is None:
            return
        if not damage.torn_tail:
            assert damage.next_intact is not None
            raise LogCorruptError(
                f"{self.path}: damaged record batch at byte {damage.position} ({damage.reason}) "
                f"with intact data from byte {damage.next_intact} on "
                f"({damage.file_size - damage.next_intact} bytes); refusing to truncate valid data"
            )
        logger.warning(
            "%s: truncating torn tail at byte %d (%d bytes dropped): %s",
            self.path,
            damage.position,
            damage.dropped_bytes,
            damage.reason,
        )
        os.ftruncate(self._fd, damage.position)
        os.fsync(self._fd)

    def _add_entry(self, info: BatchInfo, position: int) -> None:
        self._producers.record(info)
        entry = IndexEntry(
            info.base_offset, info.last_offset, position, info.size, info.max_timestamp
        )
        self._index.append(entry)
        self._last_offsets.append(entry.last_offset)
        self._log_end_offset = entry.last_offset + 1

    def append(self, batches: list[tuple[BatchInfo, bytes]]) -> int:
        """Write validated batches with server-assigned offsets; returns the first base offset.

        A batch an idempotent producer already wrote (a retry after a lost response, recognised
        by producer id, epoch and sequence range) is not written again: its original offset is
        returned instead. The data becomes visible to Fetch only after `flush` (fsync)
        completes. If the write fails (e.g. disk full), the file is cut back to its previous end
        and the error raised, so the log and its index stay consistent.
        """
        first: int | None = None
        stored: list[tuple[BatchInfo, bytes]] = []
        next_offset = self._log_end_offset
        for info, raw in batches:
            duplicate_of = self._producers.duplicate_of(info)
            if duplicate_of is not None:
                first = duplicate_of if first is None else first
                continue
            assigned = info.at(next_offset)
            stored.append((assigned, with_base_offset(raw, next_offset)))
            first = next_offset if first is None else first
            next_offset = assigned.last_offset + 1
        data = b"".join(raw for _, raw in stored)
        try:
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError:
            os.ftruncate(self._fd, self._end_position)
            raise
        for info, _raw in stored:
            self._add_entry(info, self._end_position)
            self._end_position += info.size
        assert first is not None, "append needs at least one batch"
        return first

    async def flush(self, generation: int | None = None) -> bool:
        """Fsync everything appended so far, then advance the high watermark.

        `generation`: the log's `generation` right after the caller's `append`; if the log was
        rolled back since, the caller's data is gone and `OSError` is raised. A failed fsync
        rolls the log back to its durable end and raises. Returns True if the high watermark
        moved.
        """
        self._check_generation(generation)
        target = self._log_end_offset
        if target <= self._high_watermark or self._fd < 0:
            return False
        try:
            await asyncio.to_thread(os.fsync, self._fd)
        except OSError:
            if self._fd < 0:
                return False  # the topic was deleted meanwhile: nothing left to make durable
            if self._log_end_offset > self._high_watermark:
                self._roll_back_to_durable()
            raise
        self._check_generation(generation)
        if target > self._high_watermark:
            self._high_watermark = target
            return True
        return False

    def _check_generation(self, generation: int | None) -> None:
        if generation is not None and generation != self.generation:
            raise OSError(f"{self.path}: a failed fsync discarded this append; not stored")

    def _roll_back_to_durable(self) -> None:
        """Cut file, index and producer state back to the high watermark (after a failed
        fsync, whose pages the kernel may have dropped: nothing past it can be trusted)."""
        keep = bisect.bisect_left(self._last_offsets, self._high_watermark)
        end = self._index[keep].position if keep < len(self._index) else self._end_position
        logger.warning(
            "%s: fsync failed; dropping offsets %d-%d, which no client was told are stored",
            self.path,
            self._high_watermark,
            self._log_end_offset - 1,
        )
        os.ftruncate(self._fd, end)
        self.generation += 1
        self._index.clear()
        self._last_offsets.clear()
        self._producers = ProducerBatches()
        self._log_end_offset = 0
        self._recover()
        self._high_watermark = self._log_end_offset

    def check_offset(self, offset: int) -> None:
        """Raise `OffsetOutOfRangeError` unless log start <= offset <= high watermark."""
        if offset < self.log_start_offset or offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{self.log_start_offset}, {self._high_watermark}]"
            )

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches starting with the one containing `offset`, up to the high watermark.

        At least one batch is returned if any data is available, even if larger than
        `max_bytes` (as Kafka does, so a consumer can always make progress).
        """
        self.check_offset(offset)
        if offset == self._high_watermark:
            return b""
        first = bisect.bisect_left(self._last_offsets, offset)
        start = self._index[first].position
        end = start
        for entry in self._index[first:]:
            if entry.last_offset >= self._high_watermark:
                break
            if end > start and end + entry.size - start > max_bytes:
                break
            end = entry.position + entry.size
        return os.pread(self._fd, end - start, start)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(base offset, max timestamp) of the first durable batch with a record at or after
        `timestamp_ms`, or None.

        Batch granularity: the offset may point a few records early inside that batch.
        """
        first = bisect.bisect_left(self._last_offsets, self._log_start_offset)
        for entry in self._index[first:]:
            if entry.last_offset >= self._high_watermark:
                break
            if entry.max_timestamp >= timestamp_ms:
                return max(entry.base_offset, self._log_start_offset), entry.max_timestamp
        return None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
