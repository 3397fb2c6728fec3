"""The same churn through Kafka 0.8's ZooKeeper-coordinated consumers and through our group
coordinator: why the coordinator designs replaced the ZooKeeper one, measured.

The churn (each consumer a process of its own, 12 partitions, session timeout 6 s for both):
N consumers start together; one is SIGKILLed; another is SIGKILLed; two more start together.
After each action the benchmark waits until the assignment is complete again (every partition
owned once, by consumers that all see the same group) before the next one.

* ZooKeeper mode: a real ZooKeeper (fsync on, as a server would run it), the node registered as
  broker 1, `coordinator.zookeeper.member` consumers with 0.8's range and 0.8's defaults
  (`rebalance.backoff.ms` 2000) except `rebalance.max.retries` (`--retries`, default 10: with
  0.8's 4 a consumer of a herd may give up and own nothing until the next change);
* coordinator (the peer): aiokafka consumers with the range assignor against our node, Kafka's
  broker defaults (`group.initial.rebalance.delay.ms` 3000).

Figures come from each run's event log through the Spark report (`rebalance report`'s tables),
medians over `--runs` runs, the ratio ZooKeeper / coordinator beside each:

* rebalances: episodes in the log (for ZooKeeper, stretches of overlapping consumer runs);
* failed claim rounds: attempts whose owner znodes were taken (ZooKeeper only);
* time to a complete assignment: from each churn action to the end of the last rebalance it
  caused (a kill includes the wait for the session to expire, in both);
* time without partitions: consumer-milliseconds between releasing and getting partitions back
  (`stop_the_world_total_ms`), all episodes;
* ZooKeeper requests per rebalance, and in all.

Run: .venv/bin/python benchmarks/bench_zookeeper.py [--runs 3] [--consumers 6]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import signal
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.demo.zookeeper import ZkMember, ZkStage, spawn_member, zookeeper_and_node
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import running_server
from coordinator.zookeeper.client import ZooKeeper
from rebalance.config import CoordinatorConfig

GROUP, TOPIC, PARTITIONS = "churn", "orders", 12
SESSION_MS = 6000
SETTLE_TIMEOUT_S = 120.0


async def wait_until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no complete assignment {SETTLE_TIMEOUT_S:.0f} s after: {what}")
        await asyncio.sleep(0.05)


@dataclass
class Story:
    """The churn, with the wall-clock time (epoch ms) of each action."""

    consumers: int
    actions: list[tuple[str, int]] = field(default_factory=list)

    async def run(
        self,
        start: Callable[[str], Awaitable[ZkMember]],
        settled: Callable[[list[ZkMember]], Awaitable[bool]],
    ) -> None:
        members: list[ZkMember] = []
        try:
            self.mark("join")
            members += [await start(f"c{i}") for i in range(self.consumers)]
            await wait_until(lambda: settled(members), "the first joins")
            for victim in (members[0], members[1]):
                self.mark("kill")
                victim.process.kill()
                await victim.process.wait()
                members.remove(victim)
                await wait_until(lambda: settled(members), f"killing {victim.name}")
            self.mark("join")
            members += [await start(f"late{i}") for i in range(2)]
            await wait_until(lambda: settled(members), "the late joins")
        finally:
            for m in members:
                if m.process.returncode is None:
                    m.process.send_signal(signal.SIGTERM)
            for m in members:
                await m.process.wait()
                if m.reader is not None:
                    m.reader.cancel()

    def mark(self, action: str) -> None:
        self.actions.append((action, int(time.time() * 1000)))


async def zookeeper_run(data_dir: Path, consumers: int, retries: int) -> Story:
    story = Story(consumers)
    events = data_dir / "events"
    async with zookeeper_and_node(data_dir, GROUP) as (connect, _node):
        admin = ZooKeeper(connect)
        await admin.start()
        stage = ZkStage(admin, lambda _: None, GROUP)

        async def start(name: str) -> ZkMember:
            return await spawn_member([
                "-m", "coordinator.zookeeper.member", "--zookeeper", connect, "--group", GROUP,
                "--topic", TOPIC, "--name", name, "--session-ms", str(SESSION_MS),
                "--retries", str(retries), "--event-log", str(events), "--log-level", "WARNING",
            ], name, data_dir)  # fmt: skip

        async def settled(members: list[ZkMember]) -> bool:
            return await stage.complete(members)

        try:
            await story.run(start, settled)
        finally:
            await admin.close()
    return story


async def coordinator_run(data_dir: Path, consumers: int) -> Story:
    story = Story(consumers)
    data_dir.mkdir(parents=True, exist_ok=True)  # the node's data dir goes inside
    groups = GroupCoordinatorExtension(CoordinatorConfig())
    async with running_server(
        topics=[(TOPIC, PARTITIONS)], groups=groups, data_dir=data_dir / "node"
    ) as node:

        async def start(name: str) -> ZkMember:
            return await spawn_member([
                "-m", "coordinator.demo.member", "--bootstrap", node.bootstrap, "--group", GROUP,
                "--topic", TOPIC, "--name", name, "--session-ms", str(SESSION_MS),
                "--assignor", "range",
            ], name, data_dir)  # fmt: skip

        async def settled(members: list[ZkMember]) -> bool:
            assert groups.runtime is not None
            group = groups.runtime.core.group(GROUP)
            owned = sorted(tp for m in members for tp in m.partitions)
            return (
                group is not None
                and group.kafka_state == "Stable"
                and len(group.members) == len(members)
                and owned == [(TOPIC, p) for p in range(PARTITIONS)]
            )

        await story.run(start, settled)
    return story


def figures(spark: Any, events: Path, out: Path, story: Story) -> dict[str, float]:
    """One run's figures from its event log, through the report's tables."""
    from coordinator.analytics.pipeline import run_pipeline

    run_pipeline(spark, str(events), str(out), None, show_progress=False)
    episodes = spark.read.parquet(str(out / "episodes")).where(f"`group` = '{GROUP}'").collect()
    zk_table = (
        spark.read.parquet(str(out / "zookeeper")).collect() if (out / "zookeeper").exists() else []
    )
    times = [ts for _, ts in story.actions] + [2**62]
    to_complete = []
    for start, end in itertools.pairwise(times):
        ends = [e["end_ts"] for e in episodes if start <= e["start_ts"] < end and e["end_ts"]]
        if ends:
            to_complete.append(max(ends) - start)
    rebalances = len(episodes)
    zk_ops = sum(z["zk_ops"] for z in zk_table)
    return {
        "rebalances": rebalances,
        "failed claim rounds": sum(z["failed_claim_rounds"] for z in zk_table),
        "rebalance failures (ConsumerRebalanceFailed)": sum(
            z["rebalance_failures"] for z in zk_table
        ),
        "time to a complete assignment, median of actions (ms)": statistics.median(to_complete),
        "time to a complete assignment, worst action (ms)": max(to_complete),
        "time without partitions (consumer-ms)": sum(
            e["stop_the_world_total_ms"] or 0 for e in episodes
        ),
        "ZooKeeper requests per rebalance": zk_ops / rebalances if zk_table else 0.0,
        "ZooKeeper requests": zk_ops,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--consumers", type=int, default=6)
    parser.add_argument("--retries", type=int, default=10, help="ZooKeeper rebalance.max.retries")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs' data here")
    args = parser.parse_args()
    from coordinator.analytics.session import build_session, stop_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-zookeeper-"))
    results: dict[str, list[dict[str, float]]] = {"zookeeper": [], "coordinator": []}
    runs: list[tuple[str, Path, Story]] = []
    for i in range(args.runs):  # alternated, so that load on the machine hits both alike
        for mode in ("zookeeper", "coordinator"):
            data_dir = root / f"{mode}-{i}"
            started = time.monotonic()
            if mode == "zookeeper":
                story = asyncio.run(zookeeper_run(data_dir, args.consumers, args.retries))
                events = data_dir / "events"
            else:
                story = asyncio.run(coordinator_run(data_dir, args.consumers))
                events = data_dir / "node" / "events"
            print(f"run {i + 1} {mode}: churn took {time.monotonic() - started:.1f} s", flush=True)
            runs.append((mode, events, story))
    spark = build_session("local[2]")
    try:
        for k, (mode, events, story) in enumerate(runs):
            results[mode].append(figures(spark, events, root / f"tables-{k}", story))
    finally:
        stop_session(spark)
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{args.consumers} consumers, 12 partitions, session {SESSION_MS} ms; medians of "
          f"{args.runs} runs (ZooKeeper rebalance.max.retries={args.retries})")  # fmt: skip
    print(f"{'measure':<55} {'ZooKeeper':>10} {'coordinator':>12} {'ratio':>7}")
    for measure in results["zookeeper"][0]:
        zk = statistics.median(r[measure] for r in results["zookeeper"])
        peer = statistics.median(r[measure] for r in results["coordinator"])
        ratio = f"{zk / peer:.2f}" if peer else "-"
        print(f"{measure:<55} {zk:>10.1f} {peer:>12.1f} {ratio:>7}")


if __name__ == "__main__":
    main()
