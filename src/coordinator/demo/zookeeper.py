"""`rebalance demo --protocol zookeeper`: the demo's story with Kafka 0.8's ZooKeeper-coordinated
consumers instead of the group coordinator.

A real ZooKeeper (Debian's jars, a scratch data dir, a free loopback port) and the node, which
registers as broker 1 in it. Consumers alice, bob and carol join (each its own process,
`coordinator.zookeeper.member`, range over thread ids), dave joins, bob leaves cleanly, carol is
SIGKILLed and the others wait for ZooKeeper to expire her session; then dave freezes (SIGSTOP, a
long GC pause) while erin joins: his owner znodes outlive him until his session expires, and
every claim on them fails and is retried after `rebalance.backoff.ms`; when he wakes he finds
his session gone, registers again and makes everyone rebalance once more. Every consumer writes
its events to the data dir's event log, and the Spark report explains the group's rebalances
from them. 0.8's defaults are kept (session 6 s, back-off 2 s) except `rebalance.max.retries`,
raised from 4 to 10: consumers that start together can exhaust 4 retries while the others still
hold what they must release, and then own nothing until the next change (the rebalance storm
the benchmark measures).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from coordinator.demo.common import partitions_moved
from coordinator.testing.server import RunningServer, running_server
from coordinator.zookeeper.broker import ZooKeeperBrokerRegistration
from coordinator.zookeeper.client import ZooKeeper
from coordinator.zookeeper.offsets_view import group_offsets, render
from coordinator.zookeeper.server import ZooKeeperServer, die_with_parent, free_port
from rebalance.zookeeper.formats import owner_path, owners_dir

GROUP = "demo-billing"
TOPIC = "orders"
PARTITIONS = 12
RECORDS = 1200
SESSION_MS = 6000
BACKOFF_MS = 2000
RETRIES = 10
Say = Callable[[str], None]


@dataclass
class ZkMember:
    """A member process and what it last reported: a ZooKeeper member
    (`coordinator.zookeeper.member`), or an aiokafka one (`coordinator.demo.member`, which
    reports partition numbers of the one topic and nothing about the group it saw)."""

    name: str
    process: asyncio.subprocess.Process
    consumer_id: str = ""
    partitions: list[tuple[str, int]] = field(default_factory=list)
    saw: list[str] = field(default_factory=list)
    failed_rounds: int = 0
    consumed: int = 0
    reader: asyncio.Task[None] | None = None

    async def follow(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line: dict[str, Any] = json.loads(raw)
            if line["event"] == "started":
                self.consumer_id = line["consumer"]
            elif line["event"] == "assigned" and "consumers" in line:
                self.partitions = [(t, p) for t, p in line["partitions"]]
                self.saw = line["consumers"]
                self.failed_rounds += line["attempts"] - 1
            elif line["event"] == "assigned":
                self.partitions = [(TOPIC, p) for p in line["partitions"]]
            elif line["event"] == "consumed":
                self.consumed = line["count"]


class Reporting(Protocol):
    """A member process as it last reported: its id, partitions and the group it saw."""

    consumer_id: str
    partitions: list[tuple[str, int]]
    saw: list[str]


class ZkStage:
    """Waits until the group's assignment is complete and narrates what changed."""

    def __init__(self, zk: ZooKeeper, say: Say, group: str = GROUP) -> None:
        self.zk = zk
        self.say = say
        self.group = group
        self.previous: dict[int, str] = {}

    async def owners(self) -> dict[int, str]:
        result = {}
        for name in await self.zk.children(owners_dir(self.group, TOPIC)):
            stored = await self.zk.get_or_none(owner_path(self.group, TOPIC, int(name)))
            if stored is not None:
                result[int(name)] = stored[0].decode()
        return result

    async def complete(self, members: Sequence[Reporting]) -> bool:
        """Every member saw exactly these members in its last rebalance, their partitions
        cover the topic once, and the owner znodes say the same."""
        everyone = sorted(m.consumer_id for m in members)
        if not all(sorted(m.saw) == everyone for m in members):
            return False
        if sorted(p for m in members for _, p in m.partitions) != list(range(PARTITIONS)):
            return False
        reported = {p: f"{m.consumer_id}-0" for m in members for _, p in m.partitions}
        return await self.owners() == reported

    async def settle(self, members: list[ZkMember], what: str, timeout: float = 90) -> None:
        started = time.monotonic()
        while not await self.complete(members):
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"the group did not settle after: {what}")
            await asyncio.sleep(0.1)
        names = {f"{m.consumer_id}-0": m.name for m in members}
        owners = {p: names[thread] for p, thread in (await self.owners()).items()}
        moved = partitions_moved(self.previous, owners)
        rounds = sum(m.failed_rounds for m in members)
        self.say(
            f"{what}: assignment complete after {time.monotonic() - started:.1f} s; partitions "
            f"moved: {moved}; failed claim rounds so far: {rounds}"
        )
        for m in sorted(members, key=lambda m: m.name):
            self.say(f"    {m.name:<6} {sorted(p for _, p in m.partitions)}")
        self.previous = owners


async def spawn_member(arguments: list[str], name: str, log_dir: Path) -> ZkMember:
    """`python <arguments>` as a member process (stderr to `member-<name>.log`), followed."""
    log = (log_dir / f"member-{name}.log").open("ab")
    process = await asyncio.create_subprocess_exec(
        sys.executable, *arguments, stdout=asyncio.subprocess.PIPE, stderr=log,
        env={**os.environ, "PYTHONWARNINGS": "ignore"}, preexec_fn=die_with_parent,
    )  # fmt: skip
    log.close()
    member = ZkMember(name, process)
    member.reader = asyncio.create_task(member.follow())
    return member


async def start_member(connect: str, name: str, events: Path, log_dir: Path) -> ZkMember:
    return await spawn_member([
        "-m", "coordinator.zookeeper.member", "--zookeeper", connect, "--group", GROUP,
        "--topic", TOPIC, "--name", name, "--session-ms", str(SESSION_MS),
        "--backoff-ms", str(BACKOFF_MS), "--retries", str(RETRIES),
        "--commit-interval-ms", "1000", "--event-log", str(events),
    ], name, log_dir)  # fmt: skip


@asynccontextmanager
async def zookeeper_and_node(
    data_dir: Path, chroot: str = "demo"
) -> AsyncIterator[tuple[str, RunningServer]]:
    """A ZooKeeper server and the node registered in it as broker 1."""
    server = await asyncio.to_thread(ZooKeeperServer.start, data_dir / "zookeeper")
    try:
        connect = f"{server.connect}/{chroot}"
        registration = ZooKeeperBrokerRegistration(connect)
        async with running_server(
            topics=[(TOPIC, PARTITIONS)], extensions=[registration], port=free_port(),
            data_dir=data_dir / "node", groups=False,
        ) as node:  # fmt: skip
            await registration.settled()
            yield connect, node
    finally:
        await asyncio.to_thread(server.stop)


async def run_zookeeper_story(data_dir: Path, say: Say) -> None:
    from coordinator.demo.common import produce, supervised

    events = data_dir / "events"
    async with zookeeper_and_node(data_dir) as (connect, node):
        say(f"ZooKeeper at {connect}; node on {node.bootstrap}, registered as broker 1")
        await produce(node.bootstrap)
        say(f"produced {RECORDS} records to {TOPIC!r} ({PARTITIONS} partitions)")
        admin = ZooKeeper(connect)
        await admin.start()
        members: list[ZkMember] = []
        everyone: list[ZkMember] = []
        try:
            async with supervised(members):
                stage = ZkStage(admin, say)
                say("\nconsumers alice, bob, carol join (ZooKeeper-coordinated, 0.8's range):")
                members += [await start_member(connect, n, events, data_dir) for n in
                            ("alice", "bob", "carol")]  # fmt: skip
                everyone += members
                await stage.settle(members, "three members")

                members.append(await start_member(connect, "dave", events, data_dir))
                everyone.append(members[-1])
                await stage.settle(members, "\ndave joins")

                bob = next(m for m in members if m.name == "bob")
                bob.process.send_signal(signal.SIGTERM)  # clean: commit, close the session
                await bob.process.wait()
                members.remove(bob)
                await stage.settle(members, "\nbob leaves cleanly (his session closes)")

                carol = next(m for m in members if m.name == "carol")
                carol.process.kill()
                await carol.process.wait()
                members.remove(carol)
                say(f"\ncarol is SIGKILLed; her znodes stay until ZooKeeper expires her "
                    f"{SESSION_MS} ms session...")  # fmt: skip
                await stage.settle(members, "carol's session expired")

                dave = next(m for m in members if m.name == "dave")
                dave.process.send_signal(signal.SIGSTOP)
                members.remove(dave)
                say("\ndave freezes (SIGSTOP, as in a long GC pause): his session and owner znodes "
                    "live on until ZooKeeper expires the session; erin joins meanwhile, and every "
                    "claim on dave's partitions fails...")  # fmt: skip
                members.append(await start_member(connect, "erin", events, data_dir))
                everyone.append(members[-1])
                await stage.settle(members, "dave's session expired, erin is in")
                dave.process.send_signal(signal.SIGCONT)
                members.append(dave)
                say("\ndave wakes: his session has expired; he registers again (0.8's "
                    "handleNewSession) and everybody rebalances once more")  # fmt: skip
                await stage.settle(members, "dave is back")

                await asyncio.sleep(1.5)  # one more auto-commit
                say(f"\nrecords consumed, all members together: "
                    f"{sum(m.consumed for m in everyone)}")  # fmt: skip
                say("\nowners and offsets (what 0.8's ConsumerOffsetChecker showed):")
                for line in render(await group_offsets(connect, GROUP)).splitlines():
                    say("    " + line)
                for m in members:
                    m.process.send_signal(signal.SIGTERM)
                for m in members:
                    await m.process.wait()
                say("members stopped; the node and ZooKeeper stop")
        finally:
            await admin.close()
