"""`PostgresRecordStore`: the `RecordStore` of cluster mode, every write fenced by PostgreSQL.

Rows live in `records(partition, kind, key, value, seq)` (`coordinator.cluster.schema`). Every
transaction is ONE call of `rebalance_fenced_append`: it takes the epoch rows of the batch's
partitions FOR SHARE, compares them with the epochs this node holds (`epochs.epoch_of`, the
`LeaseManager`), and only if all match upserts and deletes the rows. A deposed node's write is
thus refused by PostgreSQL whatever the node believes; a takeover that commits while the write
is open waits for it, so the new owner's load sees it or the write is refused. One statement
with autocommit, so a node frozen mid-write never leaves a transaction open that would block a
takeover: the server finishes and commits (or refuses) it on its own.

A refused append fails with `FencedError(partitions)` and writes nothing; a partition this
node does not hold at all is refused before anything is sent. Group commit as in the SQLite
store: one writer thread takes everything queued, writes it in one transaction (one WAL
flush), and wakes each waiting event loop once; appends of fenced partitions are taken out and
the rest written again in the next transaction, so one lost partition costs the others
nothing. Within a transaction the last write of a key wins (PostgreSQL refuses to upsert one
row twice in a statement).

`load(partitions)` reads those partitions' rows in last-write order (all with None). A lost
connection fails the transaction it was lost in (`StoreError`: its outcome is unknown, the node
reloads) and the next one opens a new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from coordinator.cluster.connection import driver, one_line, redacted, session_options
from coordinator.cluster.schema import SCHEMA_VERSION, newer_schema_error
from coordinator.errors import ClusterError, FencedError, StoreError
from coordinator.groups.store.base import UNPLACED, StoredRecord

log = logging.getLogger("coordinator.cluster.store")

MAX_RECORDS_PER_TRANSACTION: Final = 50_000
FENCED_APPEND_CALL: Final = (
    "SELECT rebalance_fenced_append(%s::integer[], %s::bigint[], %s::integer[], %s::text[],"
    " %s::integer[], %s, %s::integer[], %s)"
)


class Epochs(Protocol):
    def epoch_of(self, partition: int) -> int | None:
        """The epoch this node holds `partition` at; None if it does not hold it."""
        ...


@dataclass
class StoreStats:
    appends: int = 0
    transactions: int = 0
    records: int = 0
    fenced_appends: int = 0
    transaction_seconds: float = 0.0


@dataclass(eq=False)
class _Pending:
    records: Sequence[StoredRecord]
    done: Callable[[BaseException | None], None]
    loop: asyncio.AbstractEventLoop
    partitions: frozenset[int] = field(default_factory=frozenset)


_STOP: Final = object()


class PostgresRecordStore:
    """A group-committing, epoch-fenced record store on PostgreSQL (one writer thread)."""

    def __init__(self, url: str, epochs: Epochs) -> None:
        driver()
        self.url, self.epochs = url, epochs
        self.stats = StoreStats()
        self._db = self._open()
        self._read_lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Pending | object] = queue.SimpleQueue()
        self._closed = False
        self._writer = threading.Thread(
            target=self._write_loop, name="postgres-writer", daemon=True
        )
        self._writer.start()

    def __repr__(self) -> str:
        return f"<PostgresRecordStore {redacted(self.url)} closed={self._closed}>"

    def _open(self) -> Any:
        import psycopg

        try:
            db = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=5,
                options=session_options(),
                application_name="rebalance store",
            )
            row = db.execute(
                "SELECT max(version) FROM schema_version"
                " WHERE to_regclass('schema_version') IS NOT NULL"
            ).fetchone()
        except psycopg.Error as exc:
            raise ClusterError(
                f"cannot open the cluster store at {redacted(self.url)}: {one_line(exc)}"
            ) from exc
        version = row[0] if row else None
        if version is not None and version > SCHEMA_VERSION:
            db.close()
            raise newer_schema_error(version, redacted(self.url))
        if version != SCHEMA_VERSION:
            db.close()
            raise ClusterError(
                f"the cluster database at {redacted(self.url)} has no schema version "
                f"{SCHEMA_VERSION} yet: start the node's lease manager first (it creates it)"
            )
        return db

    async def append(self, records: Sequence[StoredRecord]) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.append_then(records, functools.partial(_settle, future))
        await asyncio.shield(future)  # once queued the write happens or fails as a whole

    def append_then(
        self, records: Sequence[StoredRecord], done: Callable[[BaseException | None], None]
    ) -> None:
        if self._closed:
            raise StoreError(f"{self!r}: store is closed")
        rows = list(records)
        partitions = frozenset(r.partition for r in rows)
        if UNPLACED in partitions:
            raise StoreError("a record without its __consumer_offsets partition (UNPLACED)")
        self._queue.put(_Pending(rows, done, asyncio.get_running_loop(), partitions))

    def load(self, partitions: Collection[int] | None = None) -> Iterator[StoredRecord]:
        """Live rows of `partitions` (every partition with None), oldest write first."""
        import psycopg

        sql = "SELECT kind, key, value, partition FROM records"
        params: tuple[object, ...] = ()
        if partitions is not None:
            sql += " WHERE partition = ANY(%s::integer[])"
            params = (sorted(partitions),)
        try:
            with self._read_lock, psycopg.connect(self.url, autocommit=True) as reader:
                rows = reader.execute(sql + " ORDER BY seq", params).fetchall()
        except psycopg.Error as exc:
            raise StoreError(f"{self!r}: load failed: {one_line(exc)}") from exc
        for kind, key, value, partition in rows:
            yield StoredRecord(kind, key, bytes(value), partition)

    def close(self) -> None:
        """Write everything already queued, stop the writer, close the connection."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._writer.join()
        with contextlib.suppress(Exception):
            self._db.close()

    # -- the writer thread ------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            batch: list[_Pending] = [item] if isinstance(item, _Pending) else []
            count = sum(len(p.records) for p in batch)
            stop_after = False
            while count < MAX_RECORDS_PER_TRANSACTION:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    stop_after = True
                    break
                if isinstance(more, _Pending):
                    batch.append(more)
                    count += len(more.records)
            while batch:
                batch = self._commit(batch)
            if stop_after:
                return

    def _commit(self, batch: list[_Pending]) -> list[_Pending]:
        """Write `batch` in one fenced transaction; settle what was written or refused, and
        return the appends to write again (those of partitions still held, when others in
        the same transaction were fenced)."""
        held: dict[int, int] = {}
        refused: set[int] = set()
        for p in sorted({p for pending in batch for p in pending.partitions}):
            epoch = self.epochs.epoch_of(p)
            if epoch is None:
                refused.add(p)
            else:
                held[p] = epoch
        fenced: set[int] = set()
        error: BaseException | None = None
        writable = [p for p in batch if not (p.partitions & refused)]
        if writable:
            try:
                fenced = self._write(writable, held)
            except Exception as exc:  # any failure must reach the waiting appends
                error = StoreError(f"{self!r}: write failed: {one_line(exc)}")
        refused |= fenced
        settled: list[tuple[_Pending, BaseException | None]] = []
        again: list[_Pending] = []
        for pending in batch:
            lost = pending.partitions & refused
            if lost:
                settled.append((pending, _fenced(lost, held)))
                self.stats.fenced_appends += 1
            elif fenced:
                again.append(pending)  # nothing was written: try again without the fenced
            else:
                settled.append((pending, error))
        _wake(settled)
        return again

    def _write(self, batch: list[_Pending], held: dict[int, int]) -> set[int]:
        """One `rebalance_fenced_append`: the partitions it refused (then nothing written)."""
        last: dict[tuple[int, str, str], bytes | None] = {}
        for pending in batch:
            for r in pending.records:
                row_id = (r.partition, r.kind, r.key)
                last.pop(row_id, None)  # re-inserted: ordered by its last write
                last[row_id] = r.value
        partitions = sorted({p for pending in batch for p in pending.partitions})
        keys = [key.encode() for _, _, key in last]
        values = [v for v in last.values() if v is not None]
        params = (
            _literal(partitions),
            _literal([held[p] for p in partitions]),
            _literal([p for p, _, _ in last]),
            "{" + ",".join(_quoted(kind) for _, kind, _ in last) + "}",
            _literal(map(len, keys)),
            b"".join(keys),
            _literal(-1 if v is None else len(v) for v in last.values()),
            b"".join(values),
        )
        if self._db.closed or self._db.broken:  # lost with the last write: that one failed
            self._db = self._open()
        began = time.perf_counter()
        row = self._db.execute(FENCED_APPEND_CALL, params).fetchone()
        fenced = set(row[0]) if row and row[0] else set()
        if not fenced:
            stats = self.stats
            stats.transactions += 1
            stats.appends += len(batch)
            stats.records += sum(len(p.records) for p in batch)
            stats.transaction_seconds += time.perf_counter() - began
        return fenced


def _literal(numbers: Iterable[int]) -> str:
    """An array literal of whole numbers, made in one join (the driver would adapt each)."""
    return "{" + ",".join(map(str, numbers)) + "}"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fenced(lost: frozenset[int] | set[int], held: dict[int, int]) -> FencedError:
    named = ", ".join(
        f"{p} (epoch {held[p]})" if p in held else f"{p} (not held)" for p in sorted(lost)
    )
    return FencedError(tuple(sorted(lost)), f"fenced: another node owns partitions {named}")


def _wake(settled: list[tuple[_Pending, BaseException | None]]) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Callable[..., None], Any]]] = {}
    for pending, error in settled:
        by_loop.setdefault(pending.loop, []).append((pending.done, error))
    for loop, calls in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the caller's event loop is already closed
            loop.call_soon_threadsafe(_call_all, calls)


def _call_all(calls: list[tuple[Callable[[BaseException | None], None], Any]]) -> None:
    for done, error in calls:
        try:
            done(error)
        except Exception:
            log.exception("a store write's callback failed")


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
