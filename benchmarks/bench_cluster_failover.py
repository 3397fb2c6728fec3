"""Failover time of cluster mode: from a fault of a group's coordinator to the first commit the
successor acknowledges, for kill -9 (SIGKILL: the lease must lapse) and SIGTERM (handover).

Three `rebalance serve --cluster` processes share one PostgreSQL (Debian's, fsync on, no standby:
`coordinator.testing.peers.postgresql`) with the default lease (`cluster.lease.ms` 6000, renewed
every 2000 ms). A committer follows the coordinator as a client does: FindCoordinator at any live
node, then OffsetCommit after OffsetCommit at the coordinator (the next sent once the last is
answered); on NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE or a
closed connection it asks again after 50 ms (aiokafka's and librdkafka's retry backoff is
100 ms). Each trial faults the node owning the committer's group, and measures until the first
commit acknowledged by another node. The faulted node is then replaced by a new one (a new node
id: a killed node's id stays live until its node lease lapses) and the trial waits until the
three nodes hold 16-17 partitions each again.

The peer is Kafka's configured detection bound, not a measured Kafka (no Kafka cluster here):
a killed broker is fenced after `broker.session.timeout.ms` = 9000 ms (KRaft), before election
and the coordinator's load; a controlled shutdown moves leadership at once. Prints p50/p99 per
fault, the ratio to that bound, and the machine's load (`os.getloadavg`) before and after.

Run: .venv/bin/python benchmarks/bench_cluster_failover.py [--trials 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from kio.schema.errors import ErrorCode

from coordinator.testing.peers.postgresql import PostgreSQLServer
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient
from rebalance.placement import partition_for

KAFKA_SESSION_TIMEOUT_S = 9.0  # broker.session.timeout.ms, Kafka's default (KRaft)
GROUP = "failover-bench"
TOPIC = "orders"


class Nodes:
    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root
        self.ports: dict[int, int] = {}
        self.processes: dict[int, asyncio.subprocess.Process] = {}
        self._ids = itertools.count(1)

    async def start(self) -> int:
        node_id = next(self._ids)
        log = self.root / f"node-{node_id}.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "coordinator.cli.main", "serve", "--cluster", self.url,
                "--node-id", str(node_id), "--bind", "127.0.0.1:0",
                "--data-dir", str(self.root / f"data-{node_id}"), "--topic", f"{TOPIC}:4",
                "--log-level", "INFO", stderr=out,
            )  # fmt: skip
        while not (found := re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text())):
            if process.returncode is not None:
                raise RuntimeError(log.read_text()[-2000:])
            await asyncio.sleep(0.05)
        self.ports[node_id], self.processes[node_id] = int(found.group(1)), process
        return node_id

    def owners(self) -> dict[int, int | None]:
        with psycopg.connect(self.url) as db:
            rows = db.execute(
                "SELECT partition, CASE WHEN lease_expires > clock_timestamp() THEN owner END"
                " FROM leases"
            ).fetchall()
        return dict(rows)

    async def balanced(self) -> None:
        while True:
            owners = list((await asyncio.to_thread(self.owners)).values())
            live = list(self.processes)
            if None not in owners and all(owners.count(n) in (16, 17) for n in live):
                return
            await asyncio.sleep(0.1)

    async def stop_all(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def commit_request(client: WireClient, offset: int) -> bytes:
    partition = {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
    return client.encode(
        ApiKey.OFFSET_COMMIT, 8,
        {"group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
         "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [partition]}]},
    )  # fmt: skip


async def committer(nodes: Nodes, acks: list[tuple[float, int]]) -> None:
    """Commit forever, following the coordinator; every acknowledged commit is appended to
    `acks` as (monotonic time, the node that acknowledged it)."""
    offset = 0
    while True:
        try:
            node_id, port = await find_coordinator(nodes)
            client = await WireClient.connect("127.0.0.1", port)
            try:
                while True:
                    offset += 1
                    await client.send(commit_request(client, offset))
                    _, reply = await client.read_response(ApiKey.OFFSET_COMMIT, 8)
                    if reply.topics[0].partitions[0].error_code != ErrorCode.none:
                        break
                    acks.append((time.monotonic(), node_id))
            finally:
                with contextlib.suppress(Exception):
                    await client.close()
        except (OSError, EOFError, asyncio.IncompleteReadError, LookupError):
            pass
        await asyncio.sleep(0.05)


async def find_coordinator(nodes: Nodes) -> tuple[int, int]:
    for port in list(nodes.ports.values()):
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, EOFError):
            client = await WireClient.connect("127.0.0.1", port)
            try:
                found = await client.request(
                    ApiKey.FIND_COORDINATOR, 3, {"key": GROUP, "key_type": 0}
                )
            finally:
                await client.close()
            if found.error_code == ErrorCode.none:
                return found.node_id, found.port
    raise LookupError("no coordinator yet")


async def trial(nodes: Nodes, fault: signal.Signals) -> float:
    await nodes.balanced()
    acks: list[tuple[float, int]] = []
    task = asyncio.create_task(committer(nodes, acks))
    try:
        while len(acks) < 20:
            await asyncio.sleep(0.02)
        owner = acks[-1][1]
        process = nodes.processes.pop(owner)
        del nodes.ports[owner]
        faulted = time.monotonic()
        process.send_signal(fault)
        while not any(at > faulted and node != owner for at, node in acks):
            await asyncio.sleep(0.01)
        failover = next(at for at, node in acks if at > faulted and node != owner) - faulted
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await process.wait()
    await nodes.start()
    return failover


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


async def run(trials: int) -> None:
    load_before = os.getloadavg()
    with PostgreSQLServer.start() as server, tempfile.TemporaryDirectory() as scratch:
        nodes = Nodes(server.url(), Path(scratch))
        try:
            await asyncio.gather(*(nodes.start() for _ in range(3)))
            results: dict[str, list[float]] = {"SIGKILL": [], "SIGTERM": []}
            for _ in range(trials):  # the two faults alternated: the same load for both
                for fault in (signal.SIGKILL, signal.SIGTERM):
                    results[fault.name].append(await trial(nodes, fault))
        finally:
            await nodes.stop_all()
    load_after = os.getloadavg()
    print(f"partition of {GROUP!r}: {partition_for(GROUP)}; lease 6000 ms, renewed every 2000 ms")
    print(f"{'fault':8} {'trials':>6} {'p50 s':>7} {'p99 s':>7} {'max s':>7}  vs Kafka's bound")
    for name, times in results.items():
        p50, p99 = statistics.median(times), percentile(times, 0.99)
        bound = (
            f"p50 x{p50 / KAFKA_SESSION_TIMEOUT_S:.2f} of broker.session.timeout.ms 9 s"
            if name == "SIGKILL"
            else "(Kafka: controlled shutdown, no fixed bound)"
        )
        print(f"{name:8} {len(times):>6} {p50:>7.2f} {p99:>7.2f} {max(times):>7.2f}  {bound}")
    print(f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f} (1 min)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="trials per fault (default 10)")
    asyncio.run(run(parser.parse_args().trials))


if __name__ == "__main__":
    main()
