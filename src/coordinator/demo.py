"""`rebalance demo`: the whole mission in one command, on this machine, in about a minute.

It starts the server in-process (SQLite store and event log in a scratch data dir), produces
records, and runs real aiokafka consumers, each its own process, using our sticky assignor as
their `partition_assignment_strategy`. Members join, one leaves cleanly, one is SIGKILLed and is
expired by its session timeout; a commit from a superseded generation is fenced. Then the
server stops and the Spark report (`rebalance report`) explains the rebalances from the event
log. Everything it started is stopped before it returns; the data dir and the HTML report stay
in `demo-output/`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from coordinator.groups import GroupCoordinatorExtension
from coordinator.testing import RunningServer, WireClient, running_server
from rebalance.config import CoordinatorConfig

GROUP = "demo-billing"
TOPIC = "orders"
PARTITIONS = 12
RECORDS = 1200
SESSION_MS = 6000
Say = Callable[[str], None]


@dataclass
class DemoMember:
    name: str
    process: asyncio.subprocess.Process
    partitions: list[int] = field(default_factory=list)
    consumed: int = 0
    reader: asyncio.Task[None] | None = None

    async def follow(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            if line["event"] == "assigned":
                self.partitions = line["partitions"]
            elif line["event"] == "consumed":
                self.consumed = line["count"]


async def start_member(server: RunningServer, name: str) -> DemoMember:
    log = (server.data_dir / f"member-{name}.log").open("ab")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "coordinator.demo_member", "--bootstrap", server.bootstrap,
        "--group", GROUP, "--topic", TOPIC, "--name", name, "--session-ms", str(SESSION_MS),
        stdout=asyncio.subprocess.PIPE,
        stderr=log,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    log.close()  # the child has its own handle
    member = DemoMember(name, process)
    member.reader = asyncio.create_task(member.follow())
    return member


async def produce(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for i in range(RECORDS):
            await producer.send(TOPIC, f"order-{i}".encode(), partition=i % PARTITIONS)
        await producer.flush()
    finally:
        await producer.stop()


class Stage:
    """Waits for the group to settle and narrates what changed."""

    def __init__(self, server: RunningServer, groups: GroupCoordinatorExtension, say: Say) -> None:
        self.server = server
        self.groups = groups
        self.say = say
        self.previous: dict[int, str] = {}

    def generation(self) -> int:
        assert self.groups.runtime is not None
        group = self.groups.runtime.core.group(GROUP)
        return group.generation if group is not None else 0

    async def settle(self, members: list[DemoMember], what: str, timeout: float = 60) -> None:
        assert self.groups.runtime is not None
        core = self.groups.runtime.core
        started = time.monotonic()
        deadline = started + timeout
        while True:
            group = core.group(GROUP)
            owned = [p for m in members for p in m.partitions]
            if (
                group is not None
                and group.kafka_state == "Stable"
                and len(group.members) == len(members)
                and sorted(owned) == list(range(PARTITIONS))
            ):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the group did not settle after: {what}")
            await asyncio.sleep(0.1)
        owners = {p: m.name for m in members for p in m.partitions}
        moved = sum(1 for p, owner in owners.items() if self.previous.get(p, owner) != owner)
        self.say(
            f"{what}: generation {group.generation}, stable after "
            f"{time.monotonic() - started:.1f} s; partitions moved: {moved}"
        )
        for m in sorted(members, key=lambda m: m.name):
            self.say(f"    {m.name:<6} {m.partitions}")
        self.previous = owners


async def fenced_commit(server: RunningServer, member_id: str, generation: int) -> str:
    client = await WireClient.connect(server.host, server.port)
    try:
        response = await client.request(8, 8, {
            "group_id": GROUP, "generation_id_or_member_epoch": generation,
            "member_id": member_id, "group_instance_id": None,
            "topics": [{"name": TOPIC, "partitions": [{
                "partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
                "committed_metadata": "late commit from a zombie"}]}],
        })  # fmt: skip
    finally:
        await client.close()
    return str(response.topics[0].partitions[0].error_code.name)


class Supervised(Protocol):
    """A member process and the task that reads its reports."""

    process: asyncio.subprocess.Process
    reader: asyncio.Task[None] | None


@contextlib.asynccontextmanager
async def supervised(members: Sequence[Supervised]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        for m in members:
            if m.process.returncode is None:
                m.process.kill()
                await m.process.wait()
            if m.reader is not None:
                m.reader.cancel()


async def run_group_story(data_dir: Path, say: Say) -> None:
    config = CoordinatorConfig.from_properties(
        {"group.initial.rebalance.delay.ms": "1000", "group.min.session.timeout.ms": "1000"}
    )
    groups = GroupCoordinatorExtension(config)
    members: list[DemoMember] = []
    everyone: list[DemoMember] = []
    async with (
        running_server(topics=[(TOPIC, PARTITIONS)], groups=groups, data_dir=data_dir) as server,
        supervised(members),
    ):
        say(f"server on {server.bootstrap}, data in {data_dir}")
        await produce(server.bootstrap)
        say(f"produced {RECORDS} records to {TOPIC!r} ({PARTITIONS} partitions)")
        stage = Stage(server, groups, say)
        say("\nconsumers alice, bob, carol join (aiokafka, our sticky assignor):")
        members += [await start_member(server, n) for n in ("alice", "bob", "carol")]
        everyone += members
        await stage.settle(members, "three members")

        members.append(await start_member(server, "dave"))
        everyone.append(members[-1])
        await stage.settle(members, "\ndave joins")
        stale_generation = stage.generation()
        assert groups.runtime is not None
        group = groups.runtime.core.group(GROUP)
        assert group is not None
        alice_id = next(m.member_id for m in group.members.values() if m.client_id == "alice")

        bob = next(m for m in members if m.name == "bob")
        bob.process.send_signal(signal.SIGTERM)  # clean shutdown: LeaveGroup
        await bob.process.wait()
        members.remove(bob)
        await stage.settle(members, "\nbob leaves cleanly (LeaveGroup)")

        carol = next(m for m in members if m.name == "carol")
        carol.process.kill()  # a crash: no LeaveGroup, no more heartbeats
        await carol.process.wait()
        members.remove(carol)
        say(f"\ncarol is SIGKILLed; the coordinator waits for her {SESSION_MS} ms session...")
        await stage.settle(members, "carol expired")

        outcome = await fenced_commit(server, alice_id, stale_generation)
        say(
            f"\na commit from generation {stale_generation} (now {stage.generation()}) "
            f"is fenced: {outcome}"
        )
        await asyncio.sleep(1.0)
        say(f"records consumed, all members together: {sum(m.consumed for m in everyone)}")
        for m in members:
            m.process.send_signal(signal.SIGTERM)
        for m in members:
            await m.process.wait()
        say("members stopped; the server stops and flushes its event log")


def explain(events_dir: Path, out: Path, say: Say) -> None:
    """Run the Spark report on the demo's event log and summarise its episodes."""
    from coordinator.analytics.pipeline import run_pipeline
    from coordinator.analytics.session import build_session, stop_session

    say("\nexplaining the rebalances with Spark (local mode)...")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local demo: stay on loopback
    spark = build_session("local[*]")
    try:
        counts = run_pipeline(spark, str(events_dir), str(out), out, show_progress=False)
        episodes = spark.read.parquet(str(out / "episodes")).orderBy("start_ts").collect()
        zookeeper = (
            spark.read.parquet(str(out / "zookeeper")).orderBy("start_ts").collect()
            if (out / "zookeeper").exists()
            else []
        )
    finally:
        stop_session(spark)  # "nothing left running" includes Spark's JVM
    say(
        f"{counts.events} events ({counts.quarantined} malformed lines) -> {len(episodes)} episodes"
    )
    for e in episodes:
        generation = "-" if e["generation"] is None else e["generation"]  # none: group emptied
        label = f"episode {e['episode']}" if e["node"] == -1 else f"generation {generation}"
        say(
            f"    {label}: {e['trigger']:<14} {e['outcome']:<9} "
            f"{e['duration_ms']:>6} ms, {e['partitions_moved']} partitions moved"
        )
    for z in zookeeper:
        say(
            f"    ZooKeeper episode {z['episode']}: {z['runs']} consumer runs, "
            f"{z['failed_claim_rounds']} failed claim rounds, {z['zk_ops']} ZooKeeper requests, "
            f"{z['time_without_partitions_ms']} ms without partitions (all consumers)"
        )
    say(f"report: {(out / 'index.html').resolve()}")


def run_demo(
    say: Say = print, output: Path = Path("demo-output"), protocol: str = "classic"
) -> int:
    """Run the demo; its data dir and report stay in `output` (replaced on every run).
    `protocol` "zookeeper" runs the story with Kafka 0.8's ZooKeeper-coordinated consumers."""
    started = time.monotonic()
    if output.exists():
        shutil.rmtree(output)
    output.mkdir(parents=True)  # the demo's own: a data dir is made only inside an existing one
    data_dir = output / "data"
    if protocol == "zookeeper":
        from coordinator.zookeeper.demo import run_zookeeper_story  # the zookeeper extra

        asyncio.run(run_zookeeper_story(data_dir, say))
    else:
        asyncio.run(run_group_story(data_dir, say))
    explain(data_dir / "events", output / "report", say)
    left = running_children()
    if left:
        say(f"\ndone in {time.monotonic() - started:.0f} s; still running: {left}")
        return 1
    say(f"\ndone in {time.monotonic() - started:.0f} s; nothing left running")
    return 0


def running_children() -> list[str]:
    """This process's child processes that are still alive (pid and command), from /proc.

    Every one the demo starts (consumers, the event log writer, Spark's JVM) must be gone by
    the end; this checks instead of trusting that. Empty where there is
    no /proc (the claim is then unchecked).
    """
    children: list[str] = []
    for listing in Path("/proc/self/task").glob("*/children"):
        for pid in listing.read_text().split():
            command = live_command(Path("/proc", pid))
            if command is not None:
                children.append(f"{pid} {command[:80]}")
    return children


def live_command(proc: Path) -> str | None:
    """The command line of the process at `proc` (a /proc/PID directory), or None when it has
    exited: reaped, or a zombie (exited, its parent not yet told)."""
    try:
        if (proc / "stat").read_text().rpartition(")")[2].split()[0] == "Z":
            return None
        command = (proc / "cmdline").read_bytes()
    except OSError:  # exited and reaped meanwhile
        return None
    return command.replace(b"\0", b" ").decode(errors="replace").strip()
