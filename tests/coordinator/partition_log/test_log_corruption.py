"""Partition log recovery under every damage a small log can take: for logs of several shapes
(one batch, many small ones, gzip-compressed batches, a transaction with its commit marker, a
log whose start was moved by DeleteRecords), every byte changed three ways (its low bit, its
high bit, all its bits) and every truncation point. Opening the log either refuses
(`LogCorruptError`, the file left as it was) or keeps exactly the batches before the damaged one;
a batch is only ever dropped when no intact batch follows it, and a truncation (what a crash
does) always opens, with every whole batch before the cut."""

from __future__ import annotations

import gzip
import os
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from crc32c import crc32c

from coordinator.partition_log.batch import CRC_START, HEADER_SIZE, iter_batches
from coordinator.partition_log.partition import LogCorruptError, PartitionLog
from coordinator.testing.server import record_batch

FLIPS = (0x01, 0x80, 0xFF)
EPOCH_FIELD = range(12, 16)
"""partition_leader_epoch: not covered by the batch CRC in Kafka's format, so no reader can
tell a changed one; the batches must all be there (and its bytes are served as stored)."""


def with_attributes(batch: bytes, attributes: int, records: bytes | None = None) -> bytes:
    """`batch` with other attributes (and records section), its length and CRC made right."""
    body = bytearray(batch[:HEADER_SIZE] + (batch[HEADER_SIZE:] if records is None else records))
    struct.pack_into(">i", body, 8, len(body) - 12)
    struct.pack_into(">h", body, CRC_START, attributes)
    struct.pack_into(">I", body, 17, crc32c(bytes(body[CRC_START:])))
    return bytes(body)


def gzipped(values: list[bytes]) -> bytes:
    plain = record_batch(values)
    return with_attributes(plain, 0x01, gzip.compress(plain[HEADER_SIZE:], mtime=0))


def transaction() -> list[bytes]:
    """A transactional batch of two records, then its COMMIT control batch."""
    data = record_batch([b"t1", b"t2"], producer_id=7, producer_epoch=0, base_sequence=0)
    marker = record_batch(
        [struct.pack(">hi", 0, 0)], keys=[struct.pack(">hh", 0, 1)],
        producer_id=7, producer_epoch=0, base_sequence=-1,
    )  # fmt: skip
    return [with_attributes(data, 0x10), with_attributes(marker, 0x30)]


SHAPES: dict[str, tuple[list[bytes], int]] = {
    "one batch": ([record_batch([b"only"])], 0),
    "many small batches": ([record_batch([bytes([65 + i])]) for i in range(6)], 0),
    "compressed batches": ([gzipped([b"x" * 40, b"y" * 40]), gzipped([b"z" * 30])], 0),
    "transaction and marker": ([record_batch([b"before"]), *transaction()], 0),
    "log start moved by DeleteRecords": ([record_batch([b"a", b"b"]) for _ in range(3)], 3),
}
"""Each shape: the batches as producers send them, and the log start offset DeleteRecords left."""


@dataclass
class Log:
    path: Path
    data: bytes
    ends: list[int]
    """Where each batch ends in the file."""
    next_offsets: list[int]
    """The log end offset once each batch is in."""
    start: int
    """The log start offset stored beside it."""
    fd: int
    """Open on `path` for the whole test: damage is written in place, cheaply."""

    def write(self, data: bytes) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def read(self) -> bytes:
        return os.pread(self.fd, len(self.data) + 1, 0)


async def written(path: Path, batches: list[bytes], log_start: int) -> Log:
    log = PartitionLog(path)
    for batch in batches:
        log.append(list(iter_batches(batch)))
        await log.flush()
    if log_start:
        log.advance_log_start(log_start)
    ends = [entry.position + entry.size for entry in log._index]
    next_offsets = [entry.last_offset + 1 for entry in log._index]
    log.close()
    return Log(path, path.read_bytes(), ends, next_offsets, log_start, os.open(path, os.O_RDWR))


class Outcomes:
    def __init__(self) -> None:
        self.refused = 0
        self.cut = 0
        self.intact = 0

    @property
    def cases(self) -> int:
        return self.refused + self.cut + self.intact


def open_damaged(log: Log, damaged: bytes, outcomes: Outcomes) -> int | None:
    """Open the log holding `damaged`; the number of batches it kept, or None if refused (and
    then the file must be untouched)."""
    log.write(damaged)
    try:
        reopened = PartitionLog(log.path)
    except LogCorruptError:
        assert log.read() == damaged, "a refused start changed the file"
        outcomes.refused += 1
        return None
    try:
        kept = [i for i, end in enumerate(log.ends) if end <= reopened._end_position]
        count = len(kept)
        assert reopened._end_position == (log.ends[count - 1] if count else 0)
        assert log.read() == damaged[: reopened._end_position]
        expected_end = log.next_offsets[count - 1] if count else 0
        assert reopened.high_watermark == expected_end
        assert reopened.log_start_offset == min(log.start, expected_end)
        if reopened.log_start_offset < expected_end:  # what is kept is served
            served = reopened.read(reopened.log_start_offset, 1 << 20)
            assert served and damaged.endswith(served, 0, reopened._end_position)
    finally:
        reopened.close()
    if count == len(log.ends):
        outcomes.intact += 1
    else:
        outcomes.cut += 1
    return count


def batch_of(log: Log, byte: int) -> int:
    return next(i for i, end in enumerate(log.ends) if byte < end)


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cut is fsynced; thousands of them cost seconds, and durability is what the kill -9
    tests prove, not this one."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.fixture
async def shaped(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Log]:
    batches, log_start = SHAPES[request.param]
    log = await written(tmp_path / "0.log", batches, log_start)
    yield log
    os.close(log.fd)


@pytest.mark.parametrize("shaped", SHAPES, indirect=True)
async def test_every_changed_byte_is_refused_or_cuts_only_a_damaged_last_batch(
    shaped: Log,
) -> None:
    log = shaped
    outcomes = Outcomes()
    for byte in range(len(log.data)):
        index = batch_of(log, byte)
        within = byte - (log.ends[index - 1] if index else 0)
        for flip in FLIPS:
            damaged = bytearray(log.data)
            damaged[byte] ^= flip
            kept = open_damaged(log, bytes(damaged), outcomes)
            where = f"byte {byte} ^ {flip:#04x} (batch {index}, its byte {within})"
            if within in EPOCH_FIELD:
                assert kept == len(log.ends), f"{where}: an uncovered field lost batches"
            elif index < len(log.ends) - 1:
                assert kept is None, f"{where}: intact batches follow, yet it started ({kept})"
            else:
                assert kept in (None, index), f"{where}: kept {kept} batches"
    assert outcomes.cases == 3 * len(log.data)
    assert outcomes.refused and outcomes.intact  # the property saw both outcomes


@pytest.mark.parametrize("shaped", SHAPES, indirect=True)
async def test_every_truncation_opens_with_every_whole_batch_before_it(shaped: Log) -> None:
    log = shaped
    outcomes = Outcomes()
    for size in range(len(log.data)):
        kept = open_damaged(log, log.data[:size], outcomes)
        assert kept == sum(1 for end in log.ends if end <= size), f"cut at {size}: kept {kept}"
    assert outcomes.refused == 0
