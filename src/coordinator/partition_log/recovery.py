"""Reading a partition file back at open: its intact batches, and whether its first damage is a
torn tail (safe to cut) or corruption with intact data after it (the start is refused).

A crash can only tear the end of a file: the last write, cut short or left with pages that
never reached the disk. A flipped byte, a zeroed page or an overwritten length in the middle
is something else, and the length field is the one both touch. So the bytes after the damage
decide, not the damaged field: the tail is torn only when no intact batch can be found in it,
at any byte position (magic 2, a length that fits in the file, its CRC-32C passing over what
that length claims, a base offset not below the next expected one), nor at the damage itself
read as a batch ending exactly at the end of the file (an intact last batch whose length field
alone was overwritten). A random tail passes those checks with odds of about 2^-32 per place.

DIFFERS: Kafka's `LogSegment.recover` truncates a segment at its first invalid batch and
`LogLoader` deletes the segments after it, for everything past the recovery-point checkpoint
(unflushed data, whose loss a crash permits). We keep no recovery point, so a valid batch after
damage may be acknowledged data: we refuse to start and leave the choice to `rebalance repair`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from coordinator.partition_log.batch import (
    HEADER_SIZE,
    LENGTH_PREFIX_SIZE,
    MAGIC_V2,
    BatchInfo,
    InvalidBatchError,
    parse_batch,
)

_MAGIC_AT: Final = 16  # offset of the magic byte inside a batch
_WINDOW: Final = 1 << 20  # bytes searched per read while looking past damage
_LARGEST_LAST_BATCH: Final = 64 << 20  # a longer tail is not read whole as one batch


@dataclass(frozen=True, slots=True)
class Damage:
    """The first batch of a partition file that is incomplete, fails its CRC or is out of order."""

    position: int
    """Where it starts: everything before is intact, everything from here on is cut by a repair."""
    reason: str
    file_size: int
    next_intact: int | None
    """Where the first intact batch at or after the damage starts; None when there is none."""

    @property
    def torn_tail(self) -> bool:
        """No intact batch follows: a write cut short by a crash, safe to cut at start."""
        return self.next_intact is None

    @property
    def dropped_bytes(self) -> int:
        return self.file_size - self.position


@dataclass(frozen=True, slots=True)
class LogScan:
    """What a partition file holds: its intact batches (and where), and the first damage."""

    batches: list[tuple[BatchInfo, int]]
    valid_end: int
    damage: Damage | None


def scan_log(fd: int, start: int = 0, first_offset: int | None = 0) -> LogScan:
    """Read batches from byte `start` until the end of the file or the first bad batch, and look
    past a bad batch for intact ones.

    Batches must follow each other's offsets, starting at `first_offset` (None: any, for reading
    what follows damage).
    """
    file_size = os.fstat(fd).st_size
    batches: list[tuple[BatchInfo, int]] = []
    position = start
    expected = first_offset
    while position < file_size:
        try:
            info = _read_batch(fd, position, file_size)
            if expected is not None and info.base_offset != expected:
                raise InvalidBatchError(f"base offset {info.base_offset}, expected {expected}")
        except InvalidBatchError as exc:
            next_intact = find_intact_batch(fd, position, file_size, expected or 0)
            damage = Damage(position, str(exc), file_size, next_intact)
            return LogScan(batches, position, damage)
        batches.append((info, position))
        position += info.size
        expected = info.last_offset + 1
    return LogScan(batches, position, None)


def find_intact_batch(fd: int, damage: int, file_size: int, min_offset: int) -> int | None:
    """Where the first intact batch at or after byte `damage` starts, or None (see module doc).

    The batch at `damage` itself counts with any base offset (its CRC passing means only an
    uncovered field was hit, not a torn write), or as a batch ending at the end of the file.
    """
    if _intact_at(fd, damage, file_size, None) or batch_to_end(fd, damage, file_size) is not None:
        return damage
    window_start = damage + 1
    while window_start + HEADER_SIZE <= file_size:
        window = os.pread(fd, min(_WINDOW + HEADER_SIZE, file_size - window_start), window_start)
        searched = min(_WINDOW, len(window) - HEADER_SIZE + 1)
        found = window.find(MAGIC_V2.to_bytes(1, "big"), _MAGIC_AT)
        while found != -1 and found - _MAGIC_AT < searched:
            candidate = window_start + found - _MAGIC_AT
            if _intact_at(fd, candidate, file_size, min_offset):
                return candidate
            found = window.find(MAGIC_V2.to_bytes(1, "big"), found + 1)
        window_start += searched
    return None


def _intact_at(fd: int, position: int, file_size: int, min_offset: int | None) -> bool:
    try:
        info = _read_batch(fd, position, file_size)
    except InvalidBatchError:
        return False
    return min_offset is None or info.base_offset >= min_offset


def batch_to_end(fd: int, position: int, file_size: int) -> BatchInfo | None:
    """The bytes from `position` to the end of the file, if they pass as one batch once its
    length field is set to reach exactly there (an intact batch whose length alone was hit)."""
    if not HEADER_SIZE <= file_size - position <= _LARGEST_LAST_BATCH:
        return None
    data = bytearray(os.pread(fd, file_size - position, position))
    data[8:LENGTH_PREFIX_SIZE] = (len(data) - LENGTH_PREFIX_SIZE).to_bytes(4, "big")
    try:
        return parse_batch(bytes(data))
    except InvalidBatchError:
        return None


def _read_batch(fd: int, position: int, file_size: int) -> BatchInfo:
    head = os.pread(fd, LENGTH_PREFIX_SIZE, position)
    if len(head) < LENGTH_PREFIX_SIZE:
        raise InvalidBatchError("incomplete batch length prefix")
    batch_length = int.from_bytes(head[8:12], "big", signed=True)
    size = LENGTH_PREFIX_SIZE + max(batch_length, 0)
    return parse_batch(os.pread(fd, min(size, file_size - position), position))
