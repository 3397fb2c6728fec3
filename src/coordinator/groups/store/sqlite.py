"""`SqliteStore`: the durable `RecordStore`, one SQLite file in the data dir.

Layout: table `records(kind, key, value, seq, crc)` with primary key (kind, key); an upsert
replaces the value and takes a new `seq`, so `load()` returns live records in last-write order;
a tombstone deletes the row. `crc` is the CRC-32C of the other four: SQLite checks the structure
of its pages (`PRAGMA quick_check` at open) but not the bytes of a row, so without it a changed
byte in a committed offset would load as another offset. Table `schema_version` holds the
layout version (2; a version 1 file gets its CRCs at open): a file written by a newer version,
a row failing its CRC, or a file that is not an intact SQLite database raises `StoreError`
naming the file. Nothing is ever reset silently.

Durability and group commit: WAL journal with `synchronous=FULL`, so a commit is on disk when
it returns. All writes go through one writer thread. `append` puts its records on a queue and
awaits a future (`append_then`: and returns, its callback called once they are durable); the
writer takes *everything* queued at that moment, applies it in a single transaction (rows in
multi-row statements) and commits once, then wakes each waiting event loop once for all of
them. Under load many concurrent appends therefore share one fsync, while a lone append still
commits at once (no timer). `stats` counts appends, transactions, records and the time spent
in transactions so this can be measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from crc32c import crc32c

from coordinator.groups.store.base import StoredRecord, StoreError

log = logging.getLogger("coordinator.store")

SCHEMA_VERSION: Final = 2
MAX_RECORDS_PER_TRANSACTION: Final = 50_000

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    kind  TEXT    NOT NULL,
    key   TEXT    NOT NULL,
    value BLOB    NOT NULL,
    seq   INTEGER NOT NULL,
    crc   INTEGER,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_by_seq ON records (seq);
"""
REMEDY: Final = (
    "restore it from a backup, or move it away to start with no groups and no committed offsets"
)
_STATEMENT_SIZES: Final = (256, 64, 16, 4, 1)
"""Rows per write statement, largest first; those of more values than the linked SQLite
allows in one statement (999 before SQLite 3.32) are not used."""


def statement_sizes(variable_limit: int) -> tuple[int, ...]:
    """The `_STATEMENT_SIZES` whose upserts (5 values a row) fit SQLite's variable limit."""
    return tuple(size for size in _STATEMENT_SIZES if size * 5 <= variable_limit)


def row_crc(kind: str, key: str, value: bytes, seq: int) -> int:
    """CRC-32C of one row (its fields length-prefixed, so no two rows share their bytes)."""
    kind_bytes, key_bytes = kind.encode(), key.encode()
    return crc32c(
        b"".join(
            (len(kind_bytes).to_bytes(4, "big"), kind_bytes, len(key_bytes).to_bytes(4, "big"),
             key_bytes, seq.to_bytes(8, "big", signed=True), value)
        )
    )  # fmt: skip


@functools.cache
def _upsert_rows(rows: int) -> str:
    """An upsert of `rows` rows, applied in order (a key repeated later in it wins)."""
    return (
        "INSERT INTO records (kind, key, value, seq, crc) VALUES "
        + ", ".join(["(?, ?, ?, ?, ?)"] * rows)
        + " ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, seq = excluded.seq,"
        " crc = excluded.crc"
    )


@functools.cache
def _delete_rows(rows: int) -> str:
    return "DELETE FROM records WHERE (kind, key) IN (" + ", ".join(["(?, ?)"] * rows) + ")"


@dataclass
class StoreStats:
    appends: int = 0
    transactions: int = 0
    records: int = 0
    #: Wall seconds inside transactions (BEGIN to the end of COMMIT), and of those in COMMIT
    #: (the WAL's fsync): what the writer thread waits on, for the benchmarks.
    transaction_seconds: float = 0.0
    commit_seconds: float = 0.0


@dataclass(eq=False)
class _Pending:
    records: Sequence[StoredRecord]
    #: Called on `loop` once the records are durable (None) or failed to be (the error).
    done: Callable[[BaseException | None], None]
    loop: asyncio.AbstractEventLoop


_STOP: Final = object()


class SqliteStore:
    """Durable record store with a single group-committing writer thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stats = StoreStats()
        self._lock = threading.Lock()
        self._db = self._open(path)
        self._sizes = statement_sizes(self._db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
        self._seq = self._query_max_seq()
        self._queue: queue.SimpleQueue[_Pending | object] = queue.SimpleQueue()
        self._closed = False
        self._writer = threading.Thread(
            target=self._write_loop, name=f"sqlite-writer {path.name}", daemon=True
        )
        self._writer.start()

    def __repr__(self) -> str:
        return f"<SqliteStore {self.path} seq={self._seq} closed={self._closed}>"

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        remedy = REMEDY
        try:
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: cannot open the record store: {exc}") from exc
        try:
            (check,) = db.execute("PRAGMA quick_check").fetchone()
            if check != "ok":
                raise StoreError(
                    f"{path}: SQLite integrity check failed ({_one_line(check)}); {remedy}"
                )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
            SqliteStore._check_version(db, path)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # text of damaged bytes
            db.close()
            raise StoreError(f"{path}: not a readable record store ({exc}); {remedy}") from exc
        except StoreError:
            db.close()
            raise
        return db

    @staticmethod
    def _check_version(db: sqlite3.Connection, path: Path) -> None:
        rows = db.execute("SELECT version FROM schema_version").fetchall()
        if not rows:
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            return
        version = max(row[0] for row in rows)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path}: schema version {version} is newer than this build supports "
                f"({SCHEMA_VERSION}); upgrade rebalance to read it"
            )
        if version == 1:
            SqliteStore._add_crcs(db)

    @staticmethod
    def _add_crcs(db: sqlite3.Connection) -> None:
        """Version 1 to 2: every row gets its CRC, in one transaction."""
        db.execute("BEGIN IMMEDIATE")
        columns = [row[1] for row in db.execute("PRAGMA table_info(records)")]
        if "crc" not in columns:
            db.execute("ALTER TABLE records ADD COLUMN crc INTEGER")
        rows = db.execute("SELECT kind, key, value, seq FROM records").fetchall()
        db.executemany(
            "UPDATE records SET crc = ? WHERE kind = ? AND key = ?",
            [(row_crc(k, key, bytes(v), seq), k, key) for k, key, v, seq in rows],
        )
        db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        db.execute("COMMIT")

    def _query_max_seq(self) -> int:
        (seq,) = self._db.execute("SELECT coalesce(max(seq), 0) FROM records").fetchone()
        return int(seq)

    async def append(self, records: Sequence[StoredRecord]) -> None:
        if not records:
            if self._closed:
                raise StoreError(f"{self.path}: store is closed")
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.append_then(records, functools.partial(_settle, future))
        # Shielded: once queued the write happens; a cancelled caller must not make it look
        # undone, and the writer must still be able to resolve the future.
        await asyncio.shield(future)

    def append_then(
        self, records: Sequence[StoredRecord], done: Callable[[BaseException | None], None]
    ) -> None:
        """`append` without a coroutine: queue `records` and return; `done` is called on
        this event loop once they are durable (with None) or could not be written (with the
        error). The group runtime writes this way: no task, future or shield per write, and
        the loop is woken once per transaction for everything it made durable."""
        if self._closed:
            raise StoreError(f"{self.path}: store is closed")
        self._queue.put(_Pending(list(records), done, asyncio.get_running_loop()))

    def load(self, partitions: Collection[int] | None = None) -> Iterator[StoredRecord]:
        """Every live record in last-write order, whatever `partitions` (one file holds them
        all); `StoreError` at a damaged row (`checked_rows`)."""
        with self._lock:
            rows = checked_rows(self._db, self.path)
        for kind, key, value, _seq in rows:
            yield StoredRecord(kind, key, value)

    def close(self) -> None:
        """Commit everything already queued, stop the writer, close the file."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._writer.join()
        with self._lock:
            self._db.close()

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            batch = [item]
            count = len(item.records) if isinstance(item, _Pending) else 0
            stop_after = False
            while count < MAX_RECORDS_PER_TRANSACTION:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    stop_after = True
                    break
                batch.append(more)
                count += len(more.records) if isinstance(more, _Pending) else 0
            self._commit([p for p in batch if isinstance(p, _Pending)])
            if stop_after:
                return
            # Not kept while waiting for the next write (a large group's record is ~0.3 KB a
            # member).
            item = more = None
            batch.clear()

    def _commit(self, batch: list[_Pending]) -> None:
        error: BaseException | None = None
        with self._lock:
            try:
                began = time.perf_counter()
                self._db.execute("BEGIN IMMEDIATE")
                seq, records = self._write(batch)
                committing = time.perf_counter()
                self._db.execute("COMMIT")
                ended = time.perf_counter()
                self._seq = seq
                stats = self.stats
                stats.transactions += 1
                stats.appends += len(batch)
                stats.records += records
                stats.transaction_seconds += ended - began
                stats.commit_seconds += ended - committing
            except Exception as exc:  # any failure must reach the waiting appends
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                error = StoreError(f"{self.path}: write failed: {exc}")
        # One wake-up per event loop (usually the only one), not one per append.
        by_loop: dict[asyncio.AbstractEventLoop, list[Callable[[BaseException | None], None]]]
        by_loop = {}
        for pending in batch:
            by_loop.setdefault(pending.loop, []).append(pending.done)
        for loop, callbacks in by_loop.items():
            with contextlib.suppress(RuntimeError):  # the caller's event loop is already closed
                loop.call_soon_threadsafe(_call_all, callbacks, error)

    def _write(self, batch: list[_Pending]) -> tuple[int, int]:
        """Apply `batch` in order inside the open transaction: each run of upserts (and of
        deletes) goes to SQLite as few statements of many rows each. Returns the last seq
        given and the number of records.

        Many rows per statement rather than `executemany`: SQLite's Python module releases
        and takes back the interpreter lock around every statement step, and while the event
        loop runs Python each taking back waits for it; one step for a few hundred rows waits
        once (RESULTS.md: figures behind the code)."""
        seq = self._seq
        records = 0
        upserts: list[str | bytes | int] = []
        deletes: list[str] = []
        for pending in batch:
            records += len(pending.records)
            for record in pending.records:
                value = record.value
                if value is None:
                    if upserts:
                        self._run(_upsert_rows, 5, upserts)
                        upserts = []
                    deletes += (record.kind, record.key)
                else:
                    if deletes:
                        self._run(_delete_rows, 2, deletes)
                        deletes = []
                    seq += 1
                    crc = row_crc(record.kind, record.key, value, seq)
                    upserts += (record.kind, record.key, value, seq, crc)
        if upserts:
            self._run(_upsert_rows, 5, upserts)
        if deletes:
            self._run(_delete_rows, 2, deletes)
        return seq, records

    def _run(
        self, statement: Callable[[int], str], width: int, values: Sequence[str | bytes | int]
    ) -> None:
        """`statement(n)` for every row of `values` (`width` values a row), in order, in
        statements of the `_STATEMENT_SIZES` the linked SQLite allows (a few fixed sizes, so
        that SQLite's statement cache keeps them prepared)."""
        position, end = 0, len(values)
        while position < end:
            rows = (end - position) // width
            size = next(s for s in self._sizes if s <= rows)
            step = size * width
            self._db.execute(statement(size), values[position : position + step])
            position += step


def checked_rows(db: sqlite3.Connection, path: Path) -> list[tuple[str, str, bytes, int]]:
    """Every row (kind, key, value, seq) in seq order, each checked; `StoreError` if not.

    The rows are read by a scan of the table itself and sorted here, not through the seq
    index: a row whose header was damaged (NULL where NOT NULL, which `quick_check` does not
    see) would drop out of an index scan silently; and the index must count as many."""
    try:
        rows = db.execute("SELECT kind, key, value, seq, crc FROM records NOT INDEXED").fetchall()
        (indexed,) = db.execute("SELECT count(*) FROM records INDEXED BY records_by_seq").fetchone()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: not a readable record store ({exc}); {REMEDY}") from exc
    if indexed != len(rows):
        raise StoreError(
            f"{path}: {len(rows)} records, but its seq index counts {indexed}; {REMEDY}"
        )
    checked = []
    for kind, key, value, seq, crc in rows:
        if not (
            isinstance(kind, str) and isinstance(key, str) and isinstance(value, bytes)
            and isinstance(seq, int)
        ):  # fmt: skip
            raise StoreError(f"{path}: a record of the wrong types ({kind!r}); {REMEDY}")
        if crc != row_crc(kind, key, value, seq):
            raise StoreError(
                f"{path}: record {kind} {key!r} fails its CRC-32C (damaged on disk); {REMEDY}"
            )
        checked.append((kind, key, value, seq))
    checked.sort(key=lambda row: row[3])
    return checked


def inspect_store(path: Path) -> str:
    """What `rebalance repair` says of a stopped server's `groups.sqlite`, opened read only:
    how many records it holds; `StoreError` (one line) if SQLite or a row's CRC finds damage."""
    try:
        # immutable: no -wal/-shm files made (the caller holds the data dir lock: no writer).
        db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open the record store: {exc}") from exc
    try:
        try:
            (check,) = db.execute("PRAGMA quick_check").fetchone()
            (version,) = db.execute("SELECT max(version) FROM schema_version").fetchone()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise StoreError(f"{path}: not a readable record store ({exc}); {REMEDY}") from exc
        if check != "ok":
            raise StoreError(
                f"{path}: SQLite integrity check failed ({_one_line(check)}); {REMEDY}"
            )
        if version != SCHEMA_VERSION:
            return f"schema version {version}: read by the next start, not checked here"
        return f"intact, {len(checked_rows(db, path))} records"
    finally:
        db.close()


def _one_line(check: str) -> str:
    """quick_check's report (a line a problem, under a '*** in database' heading) as one."""
    problems = [line for line in check.splitlines() if line and not line.startswith("***")]
    more = f" and {len(problems) - 1} more problems" if len(problems) > 1 else ""
    return (problems[0] if problems else check.strip()) + more


def _call_all(
    callbacks: list[Callable[[BaseException | None], None]], error: BaseException | None
) -> None:
    for done in callbacks:
        try:
            done(error)
        except Exception:  # one failing receiver must not cost the others their answer
            log.exception("a store write's callback failed")


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
