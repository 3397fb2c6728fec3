"""Partition logs: server-assigned offsets, whole-batch fetches, high watermark, recovery."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from coordinator.partition_log.batch import InvalidBatchError, iter_batches, parse_batch
from coordinator.partition_log.partition import LogCorruptError, OffsetOutOfRangeError, PartitionLog
from coordinator.partition_log.topics import InvalidTopicError, TopicStore
from coordinator.testing.server import read_records, record_batch


def batches(*values: bytes, timestamp_ms: int = 1_700_000_000_000) -> list[tuple[object, bytes]]:
    return list(iter_batches(record_batch(list(values), timestamp_ms=timestamp_ms)))


async def append(log: PartitionLog, *values: bytes, timestamp_ms: int = 1_700_000_000_000) -> int:
    base = log.append(batches(*values, timestamp_ms=timestamp_ms))  # type: ignore[arg-type]
    await log.flush()
    return base


def values_of(data: bytes) -> list[tuple[int, bytes | None]]:
    return [(record.offset, record.value) for record in read_records(data)]


async def test_server_assigns_base_offsets_and_crc_stays_valid(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    assert await append(log, b"a", b"b") == 0
    assert await append(log, b"c") == 2
    assert log.high_watermark == 3
    assert values_of(log.read(0, 1 << 20)) == [(0, b"a"), (1, b"b"), (2, b"c")]


async def test_fetch_returns_whole_batches_from_the_one_holding_the_offset(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    await append(log, b"a", b"b")
    await append(log, b"c")
    assert values_of(log.read(1, 1 << 20)) == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert values_of(log.read(2, 1 << 20)) == [(2, b"c")]
    assert log.read(3, 1 << 20) == b""


async def test_max_bytes_limits_batches_but_always_returns_one(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    await append(log, b"x" * 100)
    await append(log, b"y" * 100)
    assert values_of(log.read(0, 1)) == [(0, b"x" * 100)]
    assert len(values_of(log.read(0, 1 << 20))) == 2


async def test_offsets_outside_the_log_are_out_of_range(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    await append(log, b"a")
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


async def test_unflushed_data_is_not_visible(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    log.append(batches(b"a"))  # type: ignore[arg-type]
    assert log.high_watermark == 0
    assert log.read(0, 100) == b""
    assert await log.flush() is True
    assert log.high_watermark == 1
    assert await log.flush() is False


async def test_timestamp_lookup_finds_first_batch_at_or_after(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    await append(log, b"old", timestamp_ms=1_000_000)
    await append(log, b"new", timestamp_ms=2_000_000)
    assert log.offset_for_timestamp(1_500_000) == (1, 2_000_000)
    assert log.offset_for_timestamp(0) == (0, 1_000_000)
    assert log.offset_for_timestamp(3_000_000) is None


async def test_restart_recovers_every_batch(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    await append(log, b"a")
    await append(log, b"b", b"c")
    log.close()
    reopened = PartitionLog(tmp_path / "0.log")
    assert reopened.high_watermark == 3
    assert await append(reopened, b"d") == 3
    assert [v for _, v in values_of(reopened.read(0, 1 << 20))] == [b"a", b"b", b"c", b"d"]


async def test_torn_tail_is_truncated_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "0.log"
    log = PartitionLog(path)
    await append(log, b"a")
    await append(log, b"b")
    log.close()
    intact = path.stat().st_size
    with open(path, "ab") as handle:
        handle.write(record_batch([b"torn"])[:30])
    with caplog.at_level(logging.WARNING, logger="coordinator.partition_log"):
        reopened = PartitionLog(path)
    assert "truncating torn tail" in caplog.text
    assert path.stat().st_size == intact
    assert reopened.high_watermark == 2
    assert await append(reopened, b"c") == 2


async def test_corrupt_last_batch_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    log = PartitionLog(path)
    await append(log, b"a")
    await append(log, b"bbbb")
    log.close()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert PartitionLog(path).high_watermark == 1


async def test_damage_before_intact_data_raises_instead_of_dropping_it(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    log = PartitionLog(path)
    await append(log, b"aaaa")
    await append(log, b"b")
    log.close()
    data = bytearray(path.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    with pytest.raises(LogCorruptError, match=r"0\.log.*refusing to truncate"):
        PartitionLog(path)
    assert path.read_bytes() == before


def test_invalid_batches_are_rejected() -> None:
    good = record_batch([b"a"])
    with pytest.raises(InvalidBatchError, match="CRC"):
        parse_batch(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(InvalidBatchError, match="magic"):
        parse_batch(good[:16] + b"\x01" + good[17:])
    with pytest.raises(InvalidBatchError, match="only"):
        parse_batch(good[:-5])
    with pytest.raises(InvalidBatchError, match="header"):
        list(iter_batches(good + b"\0" * 10))


def test_topics_keep_their_ids_across_restarts(tmp_path: Path) -> None:
    store = TopicStore(tmp_path)
    created = store.create("orders", 3)
    assert store.create("orders", 5) is created
    store.close()
    reloaded = TopicStore(tmp_path)
    topic = reloaded.get("orders")
    assert topic is not None
    assert topic.topic_id == created.topic_id
    assert reloaded.by_id(created.topic_id) is topic
    assert len(topic.partitions) == 3
    reloaded.close()


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "x" * 250, "spaces here"])
def test_illegal_topic_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(InvalidTopicError):
        TopicStore(tmp_path).create(name, 1)


def test_unreadable_topic_metadata_names_the_file(tmp_path: Path) -> None:
    TopicStore(tmp_path).create("t", 1).partitions[0].close()
    meta = tmp_path / "topics" / "t" / "topic.json"
    meta.write_text("{not json")
    with pytest.raises(RuntimeError, match=r"topic\.json"):
        TopicStore(tmp_path)


async def test_failed_write_leaves_log_and_index_consistent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = PartitionLog(tmp_path / "0.log")
    await append(log, b"a")
    real_write = os.write

    def write_half_then_fail(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", write_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        log.append(batches(b"lost"))  # type: ignore[arg-type]
    monkeypatch.undo()
    assert await append(log, b"b") == 1
    log.close()
    assert [v for _, v in values_of(PartitionLog(tmp_path / "0.log").read(0, 1 << 20))] == [
        b"a",
        b"b",
    ]


async def test_failed_fsync_rolls_back_to_the_durable_end_and_fails_every_pending_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = PartitionLog(tmp_path / "0.log")
    await append(log, b"a")
    log.append(idempotent(b"x", sequence=0))  # type: ignore[arg-type]
    earlier = log.generation  # a second request's append, waiting for its own fsync
    log.append(batches(b"y"))  # type: ignore[arg-type]

    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="Input/output"):
        await log.flush(log.generation)
    monkeypatch.undo()
    assert log.high_watermark == 1
    assert os.path.getsize(tmp_path / "0.log") == len(log.read(0, 1 << 20))  # "a" alone
    with pytest.raises(OSError, match="discarded"):
        await log.flush(earlier)  # its data is gone: it must not be acknowledged
    # The retried idempotent batch is stored anew, not taken for the discarded copy.
    assert log.append(idempotent(b"x", sequence=0)) == 1  # type: ignore[arg-type]
    await log.flush(log.generation)
    assert values_of(log.read(0, 1 << 20)) == [(0, b"a"), (1, b"x")]


def idempotent(*values: bytes, sequence: int, epoch: int = 0) -> list[tuple[object, bytes]]:
    batch = record_batch(list(values), producer_id=7, producer_epoch=epoch, base_sequence=sequence)
    return list(iter_batches(batch))


async def test_retried_idempotent_batch_is_stored_once(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    assert log.append(idempotent(b"a", b"b", sequence=0)) == 0  # type: ignore[arg-type]
    assert log.append(idempotent(b"c", sequence=2)) == 2  # type: ignore[arg-type]
    assert log.append(idempotent(b"a", b"b", sequence=0)) == 0  # type: ignore[arg-type]
    await log.flush()
    assert log.high_watermark == 3
    log.close()
    reopened = PartitionLog(tmp_path / "0.log")  # producer state is rebuilt from the log
    assert reopened.append(idempotent(b"c", sequence=2)) == 2  # type: ignore[arg-type]
    assert reopened.append(idempotent(b"d", sequence=3)) == 3  # type: ignore[arg-type]


async def test_new_epoch_or_plain_batches_are_never_taken_for_retries(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    log.append(idempotent(b"a", sequence=0))  # type: ignore[arg-type]
    assert log.append(idempotent(b"a", sequence=0, epoch=1)) == 1  # type: ignore[arg-type]
    assert log.append(batches(b"p")) == 2  # type: ignore[arg-type]
    assert log.append(batches(b"p")) == 3  # type: ignore[arg-type]


async def fifty_batches(path: Path) -> list[int]:
    """The issue's log: 50 single-record batches; the byte position of each."""
    log = PartitionLog(path)
    positions = []
    for i in range(50):
        positions.append(path.stat().st_size)
        await append(log, f"value-{i}".encode())
    log.close()
    return positions


@pytest.mark.parametrize("length", [-1, 10_000, 0, 40])
async def test_a_damaged_length_followed_by_intact_batches_is_not_a_torn_tail(
    tmp_path: Path, length: int
) -> None:
    path = tmp_path / "0.log"
    positions = await fifty_batches(path)
    data = bytearray(path.read_bytes())
    data[positions[25] + 8 : positions[25] + 12] = length.to_bytes(4, "big", signed=True)
    path.write_bytes(bytes(data))
    with pytest.raises(LogCorruptError, match=f"at byte {positions[25]} .*intact data from byte"):
        PartitionLog(path)
    assert path.read_bytes() == bytes(data)


async def test_the_last_batch_with_only_its_length_damaged_is_not_a_torn_tail(
    tmp_path: Path,
) -> None:
    path = tmp_path / "0.log"
    positions = await fifty_batches(path)
    data = bytearray(path.read_bytes())
    data[positions[49] + 8 : positions[49] + 12] = (10_000).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    with pytest.raises(LogCorruptError, match=f"intact data from byte {positions[49]} on"):
        PartitionLog(path)


async def test_a_tail_of_zeros_after_a_torn_batch_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    await fifty_batches(path)
    intact = path.stat().st_size
    with open(path, "ab") as handle:  # a crash after the size grew, before the pages were written
        handle.write(record_batch([b"torn"])[:20] + bytes(8192))
    assert PartitionLog(path).high_watermark == 50
    assert path.stat().st_size == intact
