"""The cluster's record store on a real PostgreSQL: rows by partition in last-write order, and
every write fenced by the partition's epoch, checked by PostgreSQL in the write's transaction,
whatever the writing node believes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest

from coordinator.cluster.leases import LeaseManager, LeaseSettings
from coordinator.cluster.schema import MIGRATIONS, SCHEMA_VERSION
from coordinator.cluster.store import FENCED_APPEND_CALL, PostgresRecordStore
from coordinator.errors import ClusterError, FencedError, StoreError
from coordinator.groups.store.base import StoredRecord
from coordinator.node.ownership import NodeAddress

FAST = LeaseSettings(lease_ms=1000, renew_ms=250, partitions=50)


class Belief:
    """The epochs a node believes it holds (a deposed node that has not noticed yet)."""

    def __init__(self, epochs: dict[int, int]) -> None:
        self.epochs = epochs

    def epoch_of(self, partition: int) -> int | None:
        return self.epochs.get(partition)


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.05)


@pytest.fixture
async def owner(postgresql_database: str) -> AsyncIterator[LeaseManager]:
    """Node 1, holding every partition at epoch 1."""
    leases = LeaseManager(postgresql_database, NodeAddress(1, "127.0.0.1", 9001), settings=FAST)
    await leases.start()
    await until(lambda: len(leases.held()) == 50)
    yield leases
    await leases.close()


def row_count(url: str) -> int:
    with psycopg.connect(url) as db:
        (count,) = db.execute("SELECT count(*) FROM records").fetchone() or (0,)
    return int(count)


def offset(group: str, partition: int, value: bytes | None) -> StoredRecord:
    return StoredRecord("offset", f'["{group}", "t", 0]', value, partition)


async def test_rows_load_by_partition_in_last_write_order(
    owner: LeaseManager, postgresql_database: str
) -> None:
    store = PostgresRecordStore(postgresql_database, owner)
    try:
        await store.append([offset("a", 3, b"1"), offset("b", 4, b"1"), offset("c", 3, b"1")])
        await store.append([offset("a", 3, b"2"), offset("c", 3, None)])
        # Within one batch the last write of a key wins.
        await store.append([offset("d", 5, b"1"), offset("d", 5, b"2")])
        # Keys and values of any bytes: quotes, backslashes, non-ASCII, empty.
        odd = [StoredRecord("offset", 'é"\\,{}', b"", 9), StoredRecord("group", "", b"\x00", 9)]
        await store.append(odd)
        assert list(store.load([9])) == odd
        assert list(store.load([3])) == [offset("a", 3, b"2")]
        assert list(store.load()) == [
            offset("b", 4, b"1"),
            offset("a", 3, b"2"),
            offset("d", 5, b"2"),
            *odd,
        ]
        assert list(store.load([7])) == []
    finally:
        store.close()


async def test_a_deposed_nodes_write_is_refused_by_postgresql_and_leaves_no_row(
    owner: LeaseManager, postgresql_database: str
) -> None:
    """Node 1 stops (its leases lapse) and node 2 takes every partition at epoch 2. A store that
    still believes in epoch 1 writes: PostgreSQL refuses it, and nothing is written."""
    believed = Belief(owner.held())
    await owner.close()
    successor = LeaseManager(postgresql_database, NodeAddress(2, "127.0.0.1", 9002), settings=FAST)
    await successor.start()
    deposed = PostgresRecordStore(postgresql_database, believed)
    current = PostgresRecordStore(postgresql_database, successor)
    try:
        await until(lambda: len(successor.held()) == 50, timeout=15)
        assert set(successor.held().values()) == {2}
        with pytest.raises(FencedError) as fenced:
            await deposed.append([offset("g", 8, b"stale"), offset("h", 9, b"stale")])
        assert fenced.value.partitions == (8, 9)
        assert "\n" not in str(fenced.value)
        assert row_count(postgresql_database) == 0
        await current.append([offset("g", 8, b"fresh")])
        assert list(current.load([8])) == [offset("g", 8, b"fresh")]
    finally:
        deposed.close()
        current.close()
        await successor.close()


async def test_one_fenced_partition_costs_the_others_in_its_transaction_nothing(
    owner: LeaseManager, postgresql_database: str
) -> None:
    with psycopg.connect(postgresql_database, autocommit=True) as db:
        db.execute("UPDATE leases SET epoch = epoch + 1 WHERE partition = 6")  # taken over
    store = PostgresRecordStore(postgresql_database, owner)
    try:
        results = await asyncio.gather(
            store.append([offset("x", 6, b"1")]),
            store.append([offset("y", 7, b"1")]),
            store.append([offset("z", 8, b"1")]),
            return_exceptions=True,
        )
        assert isinstance(results[0], FencedError) and results[0].partitions == (6,)
        assert results[1:] == [None, None]
        assert [r.partition for r in store.load()] == [7, 8]
    finally:
        store.close()


async def test_a_partition_not_held_is_refused_before_anything_is_sent(
    owner: LeaseManager, postgresql_database: str
) -> None:
    store = PostgresRecordStore(postgresql_database, Belief({1: 1}))
    try:
        with pytest.raises(FencedError) as fenced:
            await store.append([offset("x", 2, b"1")])
        assert fenced.value.partitions == (2,)
        assert store.stats.transactions == 0
        with pytest.raises(StoreError):  # a row nobody placed
            await store.append([StoredRecord("offset", "k", b"1")])
    finally:
        store.close()


async def test_a_takeover_waits_for_an_open_write_then_the_write_is_seen(
    owner: LeaseManager, postgresql_database: str
) -> None:
    """The write's FOR SHARE row lock holds a takeover's epoch bump back until the write
    commits: the new owner's load then has its rows (no acknowledged write is lost)."""
    with (
        psycopg.connect(postgresql_database) as writer,
        psycopg.connect(postgresql_database, autocommit=True) as takeover,
    ):
        writer.execute(
            FENCED_APPEND_CALL, ([5], [owner.held()[5]], [5], ["offset"], [1], b"k", [1], b"v")
        )  # the write's transaction stays open (no autocommit)
        takeover.execute("SET lock_timeout = '300ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            takeover.execute("UPDATE leases SET epoch = epoch + 1 WHERE partition = 5")
        writer.commit()
        takeover.execute("UPDATE leases SET epoch = epoch + 1 WHERE partition = 5")
        rows = takeover.execute("SELECT key FROM records WHERE partition = 5").fetchall()
    assert rows == [("k",)]


async def test_a_schema_newer_than_ours_fails_in_one_line(
    owner: LeaseManager, postgresql_database: str
) -> None:
    with psycopg.connect(postgresql_database, autocommit=True) as db:
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(ClusterError) as newer:
        PostgresRecordStore(postgresql_database, owner)
    assert f"schema version 99, newer than this release's ({SCHEMA_VERSION})" in str(newer.value)
    other = LeaseManager(postgresql_database, NodeAddress(3, "127.0.0.1", 9003), settings=FAST)
    with pytest.raises(ClusterError) as refused:
        await other.start()
    assert "\n" not in str(refused.value) and "newer" in str(refused.value)


async def test_another_partition_count_fails_in_one_line(
    owner: LeaseManager, postgresql_database: str
) -> None:
    settings = LeaseSettings(lease_ms=1000, renew_ms=250, partitions=10)
    other = LeaseManager(postgresql_database, NodeAddress(3, "127.0.0.1", 9003), settings=settings)
    with pytest.raises(ClusterError) as refused:
        await other.start()
    assert "has 50 __consumer_offsets partitions" in str(refused.value)


async def test_a_version_1_database_is_migrated_by_the_node(postgresql_database: str) -> None:
    with psycopg.connect(postgresql_database, autocommit=True) as db:
        db.execute(MIGRATIONS[1])
        db.execute("INSERT INTO schema_version (version) VALUES (1)")
    leases = LeaseManager(postgresql_database, NodeAddress(1, "127.0.0.1", 9001), settings=FAST)
    await leases.start()
    store = PostgresRecordStore(postgresql_database, leases)
    try:
        await until(lambda: len(leases.held()) == 50)
        await store.append([offset("m", 2, b"1")])
        assert list(store.load([2])) == [offset("m", 2, b"1")]
        with psycopg.connect(postgresql_database) as db:
            assert db.execute("SELECT version FROM schema_version").fetchall() == [
                (SCHEMA_VERSION,)
            ]
    finally:
        store.close()
        await leases.close()


async def test_a_lost_connection_fails_its_write_and_the_next_write_reconnects(
    owner: LeaseManager, postgresql_database: str, postgresql: str
) -> None:
    store = PostgresRecordStore(postgresql_database, owner)
    try:
        await store.append([offset("r", 1, b"1")])
        with psycopg.connect(postgresql, autocommit=True) as db:
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'rebalance store' AND datname = %s",
                (postgresql_database.rsplit("/", 1)[1],),
            )
        with pytest.raises(StoreError) as failed:
            await store.append([offset("r", 1, b"2")])
        assert "\n" not in str(failed.value)
        await store.append([offset("r", 1, b"3")])
        assert list(store.load([1])) == [offset("r", 1, b"3")]
    finally:
        store.close()
