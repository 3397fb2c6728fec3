"""`rebalance repair`: a damaged partition log stops the server with one line pointing here; the
report says what is intact and what would be lost; `--truncate` keeps a copy and cuts the log
after its last valid batch, and the server starts again with every batch before the damage."""

from __future__ import annotations

import asyncio
from pathlib import Path

from serve_process import one_line, run_rebalance, snapshot, start_serve, stop

from coordinator.cli.repair import inspect_partition, repair
from coordinator.groups.extension import STORE_FILE
from coordinator.groups.store.base import StoredRecord
from coordinator.groups.store.sqlite import SqliteStore, inspect_store
from coordinator.partition_log.batch import iter_batches
from coordinator.partition_log.partition import PartitionLog
from coordinator.partition_log.sealed import seal_number
from coordinator.partition_log.topics import TopicStore
from coordinator.testing.server import WireClient, read_records, record_batch


async def damaged_data_dir(data_dir: Path, flip_at_batch: int = 1) -> Path:
    """Topic `orders` (1 partition) holding 4 batches, one byte of batch `flip_at_batch` flipped
    inside its records: damage in the middle, intact batches after it."""
    store = TopicStore(data_dir)
    log = store.create("orders", 1).partitions[0]
    path = data_dir / "topics" / "orders" / "0.log"
    positions = []
    for value in (b"zero", b"one", b"two", b"three"):
        positions.append(path.stat().st_size)
        log.append(_batches(value))  # type: ignore[arg-type]
        await log.flush()
    store.close()
    data = bytearray(path.read_bytes())
    data[positions[flip_at_batch] + 70] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def _batches(value: bytes) -> list[tuple[object, bytes]]:
    return list(iter_batches(record_batch([value])))


async def test_the_report_says_what_is_intact_and_what_a_cut_would_lose(tmp_path: Path) -> None:
    path = await damaged_data_dir(tmp_path)
    report = inspect_partition(path)
    assert (report.batches, report.next_offset, report.intact_after) == (1, 1, 2)
    assert report.offsets_after == (2, 3)
    assert report.damage is not None and not report.damage.torn_tail
    said: list[str] = []
    assert repair(tmp_path, truncate=False, say=said.append) == 1
    assert said[0] == f"1 partition logs in {tmp_path}: 1 damaged"
    assert said[1].startswith(f"  topics/orders/0.log: damaged at byte {report.damage.position} (")
    assert "CRC mismatch" in said[1]
    assert "1 intact batches before it (offsets up to 0)" in said[1]
    assert "2 intact batches follow from byte" in said[1]
    assert said[2:] == [
        "1 other files: all intact",
        "  topics/orders/topic.json: intact",
        "nothing changed; add --truncate to cut each damaged log at its damage",
    ]
    assert inspect_partition(path) == report  # nothing changed


async def test_truncate_keeps_a_copy_and_cuts_after_the_last_valid_batch(tmp_path: Path) -> None:
    path = await damaged_data_dir(tmp_path)
    original = path.read_bytes()
    report = inspect_partition(path)
    assert report.damage is not None
    said: list[str] = []
    assert repair(tmp_path, truncate=True, say=said.append) == 0
    (backup,) = (tmp_path / "backups").glob("repair-*/topics/orders/0.log")
    assert backup.read_bytes() == original
    assert path.read_bytes() == original[: report.damage.position]
    assert str(backup) in said[-1]
    log = PartitionLog(path)
    assert [r.value for r in read_records(log.read(0, 1 << 20))] == [b"zero"]
    log.close()
    assert repair(tmp_path, truncate=False, say=said.append) == 0
    assert said[-3] == f"1 partition logs in {tmp_path}: all intact"


async def test_from_refusal_to_repair_to_serving_again(tmp_path: Path) -> None:
    await damaged_data_dir(tmp_path)
    refused = await asyncio.to_thread(
        run_rebalance, "serve", "--data-dir", str(tmp_path), "--bind", "127.0.0.1:0"
    )
    assert refused.returncode == 1
    line = one_line(refused.stderr)
    assert "topics/orders/0.log: damaged record batch at byte" in line
    assert f"see the damage with 'rebalance repair --data-dir {tmp_path}'" in line
    assert "adding --truncate (keeps a backup)" in line

    server, port = await start_serve(tmp_path / "elsewhere")
    busy = await asyncio.to_thread(
        run_rebalance, "repair", "--data-dir", str(tmp_path / "elsewhere")
    )
    assert busy.returncode == 1
    assert "is in use by process" in one_line(busy.stderr)  # never beside a running server
    await stop(server)

    report = await asyncio.to_thread(run_rebalance, "repair", "--data-dir", str(tmp_path))
    assert report.returncode == 1
    assert "damaged at byte" in report.stdout
    fixed = await asyncio.to_thread(
        run_rebalance, "repair", "--data-dir", str(tmp_path), "--truncate"
    )
    assert fixed.returncode == 0, fixed.stderr
    server, port = await start_serve(tmp_path)
    client = await WireClient.connect("127.0.0.1", port)
    fetched = await client.request(1, 12, {
        "max_wait": 0, "min_bytes": 0, "topics": [{"topic": "orders", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 65536}]}],
    })  # fmt: skip
    assert [r.value for r in read_records(fetched.responses[0].partitions[0].records)] == [b"zero"]
    await client.close()
    await stop(server)


async def test_a_damaged_length_reports_the_intact_batches_that_follow(tmp_path: Path) -> None:
    store = TopicStore(tmp_path)
    log = store.create("orders", 1).partitions[0]
    path = tmp_path / "topics" / "orders" / "0.log"
    positions = []
    for i in range(50):
        positions.append(path.stat().st_size)
        log.append(_batches(f"value-{i}".encode()))  # type: ignore[arg-type]
        await log.flush()
    store.close()
    data = bytearray(path.read_bytes())
    data[positions[25] + 8 : positions[25] + 12] = (-1).to_bytes(4, "big", signed=True)
    path.write_bytes(bytes(data))
    report = inspect_partition(path)
    assert (report.batches, report.intact_after, report.offsets_after) == (25, 24, (26, 49))
    said: list[str] = []
    assert repair(tmp_path, truncate=False, say=said.append) == 1
    assert "25 intact batches before it (offsets up to 24)" in said[1]
    assert (
        f"24 intact batches follow from byte {positions[26]} (offsets 26-49); --truncate would "
        f"drop them and all {len(data) - positions[25]} bytes from the damage on"
    ) in said[1]


def files_but_the_lock(data_dir: Path) -> dict[str, tuple[int, int]]:
    return {name: seen for name, seen in snapshot(data_dir).items() if name != ".lock"}


async def test_the_other_files_are_reported_never_changed(tmp_path: Path) -> None:
    await damaged_data_dir(tmp_path)
    store = SqliteStore(tmp_path / STORE_FILE)
    await store.append([StoredRecord("offset", "g\x00orders\x000", b"seven")])
    store.close()
    (tmp_path / "topics" / "orders" / "0.start").write_bytes(b"crc32c 1 00000000\n")
    (tmp_path / "producer-ids").write_bytes(seal_number(2000))
    said: list[str] = []
    stores = {STORE_FILE: inspect_store}
    assert repair(tmp_path, truncate=False, say=said.append, stores=stores) == 1
    before = files_but_the_lock(tmp_path)
    said.clear()
    assert repair(tmp_path, truncate=False, say=said.append, stores=stores) == 1
    assert said[2] == "4 other files: 1 damaged (repair does not change them)"
    assert said[3] == "  topics/orders/topic.json: intact"
    assert said[4] == (
        "  topics/orders/0.start: damaged (CRC-32C mismatch for 1); restore it from a backup"
    )
    assert said[5] == "  groups.sqlite: intact, 1 records"
    assert said[6] == "  producer-ids: intact"
    assert files_but_the_lock(tmp_path) == before  # read only, groups.sqlite included

    data = bytearray((tmp_path / STORE_FILE).read_bytes())
    data[data.find(b"seven")] ^= 0x01
    (tmp_path / STORE_FILE).write_bytes(bytes(data))
    said.clear()
    assert repair(tmp_path, truncate=True, say=said.append, stores=stores) == 1
    assert said[5] == (
        "  groups.sqlite: record offset 'g\\x00orders\\x000' fails its CRC-32C (damaged on disk); "
        "restore it from a backup, or move it away to start with no groups and no committed "
        "offsets"
    )
