"""Time from start to the first record, client-balance nodes against a classic group.

TubeMQ added client-side assignment for a fast start: no allocation round to wait for (seed
003, spec §D.1). Measured here on one topic (6 partitions, records in each) and one server (our
node, in this process): three members start at once and the clock stops when every one of them
has its first record.

* client-balance: three `ClientBalanceConsumer`s (sourceCount 3): join, read the partition
  metadata, register their modulo share, fetch;
* the peer, a classic group of three aiokafka consumers (JoinGroup/SyncGroup with the leader's
  range assignment), with Kafka's default `group.initial.rebalance.delay.ms` (3000) and with 0
  (the protocol's own cost: join, sync, offset fetch, fetch).

Run: .venv/bin/python benchmarks/bench_client_balance.py [--runs 5]
Medians over runs; they go to benchmarks/RESULTS.md under "## Client-balance groups".
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_wire import machine
from coordinator.clients.client_balance import (
    ClientBalanceConfig,
    ClientBalanceConsumer,
    modulo_assigned,
)
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import RunningServer, WireClient, record_batch, running_server
from rebalance.config import CoordinatorConfig

TOPIC, PARTITIONS, MEMBERS = "orders", 6, 3


async def fill(server: RunningServer) -> None:
    client = await WireClient.connect(server.host, server.port)
    try:
        for p in range(PARTITIONS):
            await client.request(0, 9, {
                "acks": -1, "timeout": 5000,
                "topic_data": [{"name": TOPIC, "partition_data": [
                    {"index": p, "records": record_batch([b"x"] * 10)}]}],
            })  # fmt: skip
    finally:
        await client.close()


async def client_balance_run(server: RunningServer) -> float:
    group = f"cb-{uuid.uuid4()}"
    nodes = [
        ClientBalanceConsumer(ClientBalanceConfig(server.bootstrap, group)) for _ in range(MEMBERS)
    ]

    async def first_record(node_id: int) -> None:
        node = nodes[node_id]
        await node.start([TOPIC], MEMBERS, node_id)
        for key in sorted(modulo_assigned(await node.partition_meta(), MEMBERS, node_id)):
            await node.connect(key)
        await node.get_message(max_wait_ms=30_000)

    started = time.perf_counter()
    await asyncio.gather(*(first_record(i) for i in range(MEMBERS)))
    elapsed = time.perf_counter() - started
    for node in nodes:
        await node.shutdown()
    return elapsed


async def classic_run(server: RunningServer) -> float:
    from aiokafka import AIOKafkaConsumer

    group = f"classic-{uuid.uuid4()}"
    consumers = [
        AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=server.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
        )
        for _ in range(MEMBERS)
    ]

    async def first_record(consumer: AIOKafkaConsumer) -> None:
        await consumer.start()
        await consumer.getone()

    started = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(first_record(c) for c in consumers)), 60)
    elapsed = time.perf_counter() - started
    for consumer in consumers:
        await consumer.stop()
    return elapsed


async def measure(runs: int, delay_ms: int, classic_only: bool) -> tuple[list[float], list[float]]:
    config = CoordinatorConfig.from_properties({"group.initial.rebalance.delay.ms": str(delay_ms)})
    groups = GroupCoordinatorExtension(config, event_log=False)
    ours: list[float] = []
    peer: list[float] = []
    async with running_server(topics=[(TOPIC, PARTITIONS)], groups=groups) as server:
        await fill(server)
        for _ in range(runs):  # alternated, so both see the same load
            if not classic_only:
                ours.append(await client_balance_run(server))
            peer.append(await classic_run(server))
    return ours, peer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"# start to first record on every member, {MEMBERS} members, {PARTITIONS} partitions")
    print(f"# {machine()}; medians of {args.runs} runs")
    ours, classic_default = asyncio.run(measure(args.runs, 3000, classic_only=False))
    _, classic_zero = asyncio.run(measure(args.runs, 0, classic_only=True))
    cb = statistics.median(ours) * 1000
    rows = [
        ("client-balance (modulo split, sourceCount 3)", cb),
        (
            "classic, aiokafka, initial rebalance delay 3000 ms",
            statistics.median(classic_default) * 1000,
        ),
        ("classic, aiokafka, initial rebalance delay 0", statistics.median(classic_zero) * 1000),
    ]
    for label, ms in rows:
        ratio = "" if ms == cb else f"  ({ms / cb:.1f}x client-balance)"
        print(f"{label:<52} {ms:8.1f} ms{ratio}")


if __name__ == "__main__":
    main()
