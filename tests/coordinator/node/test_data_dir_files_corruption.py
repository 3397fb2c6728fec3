"""The data dir's small files under every damage: each byte of a log start offset
(`<partition>.start`) and of the producer id block (`producer-ids`) flipped three ways and
replaced by every character that keeps the line plausible (a digit, a hex letter, a space, a
newline), each byte of a `topic.json` flipped three ways, every truncation of each. Opening either
refuses in one line (`OperationalError`, naming the file) or reads exactly what was written:
never a log start moved, a producer id handed out twice, a topic's id, partitions or configs
changed."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from serve_process import refused_start

from coordinator.errors import OperationalError
from coordinator.partition_log.batch import iter_batches
from coordinator.partition_log.partition import PartitionLog
from coordinator.partition_log.producer_ids import ProducerIdAllocator
from coordinator.partition_log.topics import TopicStore
from coordinator.testing.server import record_batch

CONFIGS = {"retention.ms": "3600000", "cleanup.policy": "delete"}


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of opens, each may write a file; durability is the kill -9 tests' business."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


FLIPS = (0x01, 0x80, 0xFF)
PLAUSIBLE = b"0123456789abcdef \n"


def every_change(data: bytes, replacements: bytes) -> Iterator[tuple[str, bytes]]:
    """Each byte flipped three ways and replaced by each of `replacements`, then every
    truncation."""
    for position in range(len(data)):
        for changed_to in {data[position] ^ flip for flip in FLIPS} | set(replacements):
            if changed_to != data[position]:
                changed = bytearray(data)
                changed[position] = changed_to
                yield f"byte {position} = {changed_to:#04x}", bytes(changed)
    for size in range(len(data)):
        yield f"cut at {size}", data[:size]


def check_every_change(
    path: Path, replacements: bytes, reads_back: Callable[[], None]
) -> tuple[int, int]:
    """Write each damaged copy of `path`; `reads_back` must refuse (OperationalError) or see
    the original. Returns (cases refused, cases read back as written)."""
    original = path.read_bytes()
    refused = intact = 0
    for what, damaged in every_change(original, replacements):
        path.write_bytes(damaged)
        try:
            reads_back()
        except OperationalError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc), (what, exc)
            refused += 1
        except AssertionError as exc:
            raise AssertionError(f"{path.name}, {what}: {exc}") from None
        else:
            intact += 1
    path.write_bytes(original)
    return refused, intact


async def test_a_damaged_log_start_offset_is_refused_never_moved(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "0.log")
    for value in (b"a", b"b", b"c", b"d"):
        log.append(list(iter_batches(record_batch([value]))))
        await log.flush()
    log.advance_log_start(2)
    log.close()

    def reads_back() -> None:
        reopened = PartitionLog(tmp_path / "0.log")
        reopened.close()
        assert reopened.log_start_offset == 2, f"log start {reopened.log_start_offset}"

    refused, intact = check_every_change(tmp_path / "0.start", PLAUSIBLE, reads_back)
    assert refused and intact


def test_a_damaged_producer_id_block_never_hands_an_id_out_twice(tmp_path: Path) -> None:
    allocator = ProducerIdAllocator(tmp_path)
    handed_out = [allocator.allocate() for _ in range(3)]
    block = (tmp_path / "producer-ids").read_bytes()

    def reads_back() -> None:
        next_id = ProducerIdAllocator(tmp_path).allocate()
        (tmp_path / "producer-ids").write_bytes(block)  # allocate may have reserved a block
        assert next_id > max(handed_out), f"id {next_id} again"

    refused, intact = check_every_change(tmp_path / "producer-ids", PLAUSIBLE, reads_back)
    assert refused and intact


def test_damaged_topic_metadata_is_refused_never_read_as_another_topic(tmp_path: Path) -> None:
    store = TopicStore(tmp_path)
    topic = store.create("orders", 3, CONFIGS)
    expected = (topic.topic_id, 3, CONFIGS)
    store.close()

    def reads_back() -> None:
        reopened = TopicStore(tmp_path)
        reopened.close()
        found = reopened.get("orders")
        assert found is not None and [t.name for t in reopened] == ["orders"]
        assert (found.topic_id, len(found.partitions), found.configs) == expected

    meta = tmp_path / "topics" / "orders" / "topic.json"
    refused, intact = check_every_change(meta, b"", reads_back)
    assert refused and intact


def test_topic_metadata_counting_fewer_partitions_than_its_logs_is_refused(
    tmp_path: Path,
) -> None:
    store = TopicStore(tmp_path)
    topic = store.create("orders", 3)
    store._write_meta(topic, 2)  # as if an older copy had been restored
    store.close()
    with pytest.raises(OperationalError, match=r"2 partitions, but 2\.log beside it"):
        TopicStore(tmp_path)


def test_files_of_earlier_versions_are_still_read(tmp_path: Path) -> None:
    topic_id = uuid.uuid4()
    (tmp_path / "topics" / "orders").mkdir(parents=True)
    (tmp_path / "topics" / "orders" / "topic.json").write_text(
        f'{{"name": "orders", "topic_id": "{topic_id}", "partitions": 1, "configs": {{}}}}'
    )
    (tmp_path / "topics" / "orders" / "0.start").write_text("0")
    (tmp_path / "producer-ids").write_text("2000\n")
    store = TopicStore(tmp_path)
    found = store.get("orders")
    assert found is not None and found.topic_id == topic_id
    store.close()
    assert ProducerIdAllocator(tmp_path).allocate() == 2000


async def test_serve_names_a_damaged_log_start_in_one_line(tmp_path: Path) -> None:
    store = TopicStore(tmp_path)
    store.create("orders", 1)
    store.close()
    (tmp_path / "topics" / "orders" / "0.start").write_bytes(b"crc32c 7 00000000\n")
    assert await refused_start(tmp_path) == (
        f"rebalance serve: {tmp_path}/topics/orders/0.start: unreadable log start offset "
        f"(CRC-32C mismatch for 7); restore it from a backup, or delete it to read the partition "
        f"from offset 0 again"
    )
