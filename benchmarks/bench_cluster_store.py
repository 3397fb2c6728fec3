"""Fenced commits on PostgreSQL (`coordinator.cluster.store.PostgresRecordStore`) beside the
single-node SQLite store (`SqliteStore`), in the same run, on the same workload.

Each of `--writers` concurrent committers stands for one consumer group committing: an
OffsetCommit of 8 partitions (8 offset rows, encoded by `record_codec.encode` with the group's
`__consumer_offsets` partition), appended as the group runtime's group commit hands a batch to
the store, awaited, then the next. The stores batch whatever is queued into one transaction
(PostgreSQL: one `rebalance_fenced_append` call, epochs taken FOR SHARE; SQLite: one fsync).
PostgreSQL runs from Debian's package on a temporary data dir with fsync on and no standby
(`coordinator.testing.peers.postgresql`); a `LeaseManager` holds all 50 partitions.

Prints offsets/s and rows per transaction per store, the ratio, and the machine's load
(`os.getloadavg`) before and after. Medians over `--runs` alternated runs.

Run: .venv/bin/python benchmarks/bench_cluster_store.py [--writers 1,16,128,512] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Protocol

from coordinator.cluster.leases import LeaseManager
from coordinator.cluster.store import PostgresRecordStore
from coordinator.groups import record_codec
from coordinator.groups.store.base import StoredRecord
from coordinator.groups.store.sqlite import SqliteStore
from coordinator.node.ownership import NodeAddress
from coordinator.testing.peers.postgresql import PostgreSQLServer
from rebalance.placement import partition_for
from rebalance.records import OffsetAndMetadata, OffsetCommitRecord

PARTITIONS_PER_COMMIT = 8


class Store(Protocol):
    async def append(self, records: list[StoredRecord]) -> None: ...

    def close(self) -> None: ...


def commit_rows(group: str, offset: int) -> list[StoredRecord]:
    placed = partition_for(group)
    return [
        record_codec.encode(
            OffsetCommitRecord(group, "orders", p, OffsetAndMetadata(offset, -1, "", offset)),
            placed,
        )
        for p in range(PARTITIONS_PER_COMMIT)
    ]


async def committers(store: Store, writers: int, seconds: float) -> float:
    """Offsets made durable per second by `writers` concurrent committers."""
    done = 0
    stop_at = time.perf_counter() + seconds

    async def commit(group: str) -> None:
        nonlocal done
        offset = 0
        while time.perf_counter() < stop_at:
            offset += 1
            await store.append(commit_rows(group, offset))
            done += PARTITIONS_PER_COMMIT

    began = time.perf_counter()
    await asyncio.gather(*(commit(f"bench-group-{w}") for w in range(writers)))
    return done / (time.perf_counter() - began)


async def run_postgresql(url: str, writers: int, seconds: float) -> tuple[float, float]:
    leases = LeaseManager(url, NodeAddress(1, "127.0.0.1", 9092))
    await leases.start()
    store = PostgresRecordStore(url, leases)
    try:
        rate = await committers(store, writers, seconds)
        per_txn = store.stats.records / max(store.stats.transactions, 1)
    finally:
        store.close()
        await leases.release_all()  # the next run's node may use the same node id at once
    return rate, per_txn


async def run_sqlite(folder: Path, writers: int, seconds: float) -> tuple[float, float]:
    store = SqliteStore(folder / f"groups-{time.monotonic_ns()}.sqlite")
    try:
        rate = await committers(store, writers, seconds)
        per_txn = store.stats.records / max(store.stats.transactions, 1)
    finally:
        store.close()
    return rate, per_txn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default="1,16,128,512")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    server = PostgreSQLServer.start({"shared_buffers": "128MB"})
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as folder:
            for writers in (int(w) for w in args.writers.split(",")):
                pg, lite = [], []
                for _ in range(args.runs):
                    pg.append(asyncio.run(run_postgresql(server.url(), writers, args.seconds)))
                    lite.append(asyncio.run(run_sqlite(Path(folder), writers, args.seconds)))
                rows.append((writers, pg, lite))
    finally:
        server.stop()
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after "
          f"{load_after[0]:.2f} {load_after[1]:.2f}; {args.runs} runs of {args.seconds:.0f} s, "
          f"{PARTITIONS_PER_COMMIT} offsets per commit")  # fmt: skip
    print("| writers | PostgreSQL fenced offsets/s | rows/txn | SQLite offsets/s | rows/txn "
          "| PostgreSQL / SQLite |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|")
    for writers, pg, lite in rows:
        pg_rate = statistics.median(r for r, _ in pg)
        lite_rate = statistics.median(r for r, _ in lite)
        print(f"| {writers} | {pg_rate:,.0f} | {statistics.median(t for _, t in pg):.0f} "
              f"| {lite_rate:,.0f} | {statistics.median(t for _, t in lite):.0f} "
              f"| {pg_rate / lite_rate:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
