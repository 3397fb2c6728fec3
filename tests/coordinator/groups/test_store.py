"""Record stores: last value per (kind, key), tombstones, reload order, and the SQLite file."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.store import MemoryStore, RecordStore, SqliteStore, StoredRecord, StoreError
from coordinator.groups.store.sqlite import SCHEMA_VERSION, statement_sizes


def offset(group: str, partition: int, value: bytes | None) -> StoredRecord:
    return StoredRecord("offset", f"{group}/t/{partition}", value)


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RecordStore]:
    opened: RecordStore = (
        MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "groups.sqlite")
    )
    yield opened
    opened.close()


async def test_latest_value_wins_in_last_write_order(store: RecordStore) -> None:
    await store.append([offset("g", 0, b"1"), offset("g", 1, b"1")])
    await store.append([offset("g", 0, b"2")])
    assert list(store.load()) == [offset("g", 1, b"1"), offset("g", 0, b"2")]


async def test_tombstone_deletes_the_key(store: RecordStore) -> None:
    await store.append([offset("g", 0, b"1"), StoredRecord("group", "g", b"meta")])
    await store.append([offset("g", 0, None)])
    assert list(store.load()) == [StoredRecord("group", "g", b"meta")]


async def test_same_key_in_different_kinds_are_separate(store: RecordStore) -> None:
    await store.append([StoredRecord("group", "g", b"a"), StoredRecord("offset", "g", b"b")])
    assert len(list(store.load())) == 2


async def test_sqlite_reload_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "groups.sqlite"
    first = SqliteStore(path)
    await first.append([offset("g", 0, b"1"), offset("g", 1, b"1")])
    await first.append([offset("g", 0, b"2"), offset("g", 1, None)])
    first.close()
    second = SqliteStore(path)
    assert list(second.load()) == [offset("g", 0, b"2")]
    await second.append([offset("g", 2, b"3")])
    assert [r.key for r in second.load()] == ["g/t/0", "g/t/2"]
    second.close()


async def test_concurrent_appends_share_transactions(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "groups.sqlite")
    writers = 200
    await asyncio.gather(*(store.append([offset(f"g{i}", 0, b"x")]) for i in range(writers)))
    assert store.stats.appends == writers
    assert store.stats.transactions < writers
    assert len(list(store.load())) == writers
    store.close()


@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 40), st.none() | st.binary(min_size=1, max_size=3)),
            max_size=300,
        ),
        min_size=1,
        max_size=4,
    )
)
@settings(max_examples=25, deadline=None)
def test_writes_in_one_transaction_apply_in_order(
    appends: list[list[tuple[int, bytes | None]]],
) -> None:
    """Upserts and tombstones, runs of each of any length and keys repeated, in appends that
    share one transaction (queued while the writer was held): the file holds what applying
    them one by one gives, in last-write order."""
    with tempfile.TemporaryDirectory() as scratch:
        store = SqliteStore(Path(scratch) / "groups.sqlite")

        async def write_all() -> None:
            with store._lock:  # the writer waits: every append queues behind the first
                writes = [
                    asyncio.ensure_future(store.append([offset("g", k, v) for k, v in rows]))
                    for rows in appends
                ]
                await asyncio.sleep(0.01)
            await asyncio.gather(*writes)

        asyncio.run(write_all())
        model: dict[str, bytes] = {}
        for rows in appends:
            for k, v in rows:
                key = offset("g", k, v).key
                model.pop(key, None)
                if v is not None:
                    model[key] = v
        assert [(r.key, r.value) for r in store.load()] == list(model.items())
        assert store.stats.transactions <= 2
        store.close()


async def test_an_sqlite_allowing_999_values_a_statement_gets_smaller_statements(
    tmp_path: Path,
) -> None:
    """SQLite before 3.32 allows 999 values in a statement: a 256-row upsert (1,024 values)
    fails there, so the sizes used are those that fit, and the rows all arrive."""
    assert statement_sizes(250_000)[0] == 256
    assert statement_sizes(999) == (64, 16, 4, 1)
    store = SqliteStore(tmp_path / "groups.sqlite")
    store._db.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)  # as such an SQLite
    with pytest.raises(StoreError, match="too many SQL variables"):
        await store.append([offset("g", p, b"x") for p in range(300)])
    store._sizes = statement_sizes(999)  # what the store chooses when it opens one
    await store.append([offset("g", p, b"x") for p in range(300)])
    assert len(list(store.load())) == 300
    store.close()


async def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "groups.sqlite"
    SqliteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match=r"groups\.sqlite: schema version 3 is newer"):
        SqliteStore(path)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"this is not a database at all" * 200,
        lambda data: data[:100] + b"\xff" * 4000 + data[4100:],
    ],
    ids=["garbage", "damaged-pages"],
)
async def test_corrupt_file_raises_naming_it(
    tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    path = tmp_path / "groups.sqlite"
    store = SqliteStore(path)
    await store.append([offset(f"g{i}", 0, b"v" * 100) for i in range(200)])
    store.close()
    path.write_bytes(damage(path.read_bytes()))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    with pytest.raises(StoreError, match=r"groups\.sqlite"):
        SqliteStore(path)


async def test_closed_store_refuses_appends(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "groups.sqlite")
    store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.append([offset("g", 0, b"1")])
    with pytest.raises(StoreError, match="closed"):
        store.append_then([offset("g", 0, b"1")], lambda error: None)


async def test_append_then_calls_back_on_the_loop_once_durable_or_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteStore(tmp_path / "groups.sqlite")
    loop = asyncio.get_running_loop()
    seen: list[tuple[BaseException | None, bool, list[StoredRecord]]] = []
    called = asyncio.Event()

    def done(error: BaseException | None) -> None:
        on_loop = asyncio.get_running_loop() is loop
        seen.append((error, on_loop, list(store.load())))
        called.set()

    store.append_then([offset("g", 0, b"1")], done)
    await called.wait()
    assert seen == [(None, True, [offset("g", 0, b"1")])]

    def broken(batch: object) -> tuple[int, int]:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "_write", broken)
    called.clear()
    store.append_then([offset("g", 1, b"1")], done)
    await called.wait()
    error, on_loop, rows = seen[-1]
    assert isinstance(error, StoreError) and "disk I/O error" in str(error)
    assert on_loop and rows == [offset("g", 0, b"1")]
    store.close()


async def test_close_commits_what_was_queued(tmp_path: Path) -> None:
    path = tmp_path / "groups.sqlite"
    store = SqliteStore(path)
    pending = [asyncio.create_task(store.append([offset(f"g{i}", 0, b"x")])) for i in range(50)]
    await asyncio.sleep(0)
    await asyncio.to_thread(store.close)
    await asyncio.gather(*pending)
    reopened = SqliteStore(path)
    assert len(list(reopened.load())) == 50
    reopened.close()


def test_both_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    sqlite_store = SqliteStore(tmp_path / "s.sqlite")
    assert isinstance(sqlite_store, RecordStore)
    assert isinstance(MemoryStore(), RecordStore)
    sqlite_store.close()
