"""Cluster mode's topic catalogue (`coordinator.cluster.topic_catalogue`): how long a CreateTopics
decision takes on one node, and how long until another node's store has the topic.

Two `TopicCatalogue`s (nodes 1 and 2, each its own data dir) on one PostgreSQL from Debian's
package (temporary data dir, fsync on, no standby: `coordinator.testing.peers.postgresql`), in
one process. Each trial creates a topic of `--partitions` partitions on node 1 and measures
(a) `create()` on node 1: the catalogue's insert plus the local logs, and (b) from the create's
return until node 2's store has the topic. Node 2 polls every 600 s, so (b) is the NOTIFY path
alone. Prints medians and p99 (milliseconds) and the machine's load (`os.getloadavg`) before and
after.

Run: .venv/bin/python benchmarks/bench_topic_catalogue.py [--trials 200] [--partitions 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import psycopg

from coordinator.cluster.topic_catalogue import TopicCatalogue
from coordinator.partition_log.topics import TopicStore
from coordinator.testing.peers.postgresql import PostgreSQLServer


async def trials(url: str, root: Path, count: int, partitions: int) -> tuple[list[float], ...]:
    stores = [TopicStore(root / f"node-{n}") for n in (1, 2)]
    one = TopicCatalogue(url, stores[0], poll_s=600, node_id=1)
    two = TopicCatalogue(url, stores[1], poll_s=600, node_id=2)
    await one.start()
    await two.start()
    created, seen = [], []
    try:
        for trial in range(count):
            name = f"bench-{trial}"
            began = time.perf_counter()
            await one.create(name, partitions, new=True)
            made = time.perf_counter()
            while stores[1].get(name) is None:
                await asyncio.sleep(0.0005)
            created.append(made - began)
            seen.append(time.perf_counter() - made)
    finally:
        await one.close()
        await two.close()
        for store in stores:
            store.close()
    return created, seen


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    server = PostgreSQLServer.start()
    try:
        with psycopg.connect(server.url(), autocommit=True) as db:
            db.execute("CREATE DATABASE bench_topics")
        with tempfile.TemporaryDirectory(prefix="bench-topics-") as folder:
            created, seen = asyncio.run(
                trials(server.url("bench_topics"), Path(folder), args.trials, args.partitions)
            )
    finally:
        server.stop()
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after "
          f"{load_after[0]:.2f} {load_after[1]:.2f}; {args.trials} topics of "
          f"{args.partitions} partitions")  # fmt: skip
    print("| what | median ms | p99 ms |")
    print("|---|---:|---:|")
    for what, values in (("create on node 1", created), ("until node 2 has it", seen)):
        print(f"| {what} | {statistics.median(values) * 1000:.2f} | {p99(values) * 1000:.2f} |")


if __name__ == "__main__":
    main()
