"""`groups.sqlite` under damage: every byte of the SQLite header and of the cells that hold the
records flipped three ways, and every truncation at a page boundary. Opening the store and
loading it either refuses in one line (`StoreError` naming the file: SQLite's own checks, or a
row failing its CRC-32C) or loads exactly the records written: never a committed offset, a
member or a group read back changed. `rebalance serve` says the same line."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_process import refused_start

from coordinator.groups.store.base import StoredRecord, StoreError
from coordinator.groups.store.sqlite import SqliteStore

RECORDS = [
    StoredRecord("offset", f"orders-group\x00orders\x00{p}", f"offset {p} ".encode() * 3)
    for p in range(6)
] + [StoredRecord("group", "orders-group", b"metadata" * 6), StoredRecord("member", "m-1", b"m!")]
FLIPS = (0x01, 0x80, 0xFF)


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)


async def written(path: Path) -> bytes:
    store = SqliteStore(path)
    await store.append(RECORDS)
    store.close()
    for leftover in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        assert not leftover.exists()  # closed: everything is in the main file
    return path.read_bytes()


def record_cells(data: bytes) -> range:
    """From a little before the first record's bytes to the end of the last one."""
    starts = [data.find(r.value) for r in RECORDS]
    ends = [start + len(r.value) for start, r in zip(starts, RECORDS, strict=True)]
    assert min(starts) > 100 and max(ends) - min(starts) < 1024
    return range(min(starts) - 48, max(ends))


def damaged_copies(data: bytes) -> Iterator[tuple[str, bytes]]:
    for position in [*range(100), *record_cells(data)]:
        for flip in FLIPS:
            changed = bytearray(data)
            changed[position] ^= flip
            yield f"byte {position} ^ {flip:#04x}", bytes(changed)
    for size in range(0, len(data), 4096):
        yield f"cut at {size}", data[:size]


def loads(path: Path) -> list[StoredRecord]:
    store = SqliteStore(path)
    try:
        return list(store.load())
    finally:
        store.close()


async def test_a_damaged_store_is_refused_or_reads_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "groups.sqlite"
    original = await written(path)
    assert loads(path) == RECORDS
    refused = intact = 0
    for what, damaged in damaged_copies(original):
        for leftover in tmp_path.glob("groups.sqlite-*"):
            leftover.unlink()
        path.write_bytes(damaged)
        try:
            found = loads(path)
        except StoreError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc), (what, exc)
            refused += 1
            continue
        assert found == RECORDS or (not damaged and found == []), f"{what}: read back changed"
        intact += 1
    assert refused > 100 and intact > 100


async def test_a_version_1_store_gets_its_crcs_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "groups.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);"
            "INSERT INTO schema_version VALUES (1);"
            "CREATE TABLE records (kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,"
            " seq INTEGER NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID;"
        )
        db.executemany(
            "INSERT INTO records VALUES (?, ?, ?, ?)",
            [(r.kind, r.key, r.value, seq) for seq, r in enumerate(RECORDS, 1)],
        )
    db.close()
    assert loads(path) == RECORDS
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(2,)]
        db.execute("UPDATE records SET value = ? WHERE kind = 'member'", (b"\x08",))
    db.close()
    with pytest.raises(StoreError, match="record member 'm-1' fails its CRC-32C"):
        loads(path)


async def test_serve_refuses_a_changed_record_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "groups.sqlite"
    original = bytearray(await written(path))
    original[original.find(RECORDS[2].value)] ^= 0x01  # committed offset bytes
    path.write_bytes(bytes(original))
    assert await refused_start(tmp_path) == (
        f"rebalance serve: {path}: record offset {RECORDS[2].key!r} fails its CRC-32C (damaged "
        f"on disk); restore it from a backup, or move it away to start with no groups and no "
        f"committed offsets"
    )
