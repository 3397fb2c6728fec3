"""`rebalance demo`: the whole mission in one command, on this machine, in about a minute.

It starts the server in-process (SQLite store and event log in a scratch data dir), produces
records, and runs real aiokafka consumers, each its own process, using our sticky assignor as
their `partition_assignment_strategy` (`--protocol consumer`: librdkafka consumers with
`group.protocol=consumer`, KIP-848, the coordinator's `uniform` assignor; `--protocol
cooperative`: aiokafka consumers fetching what this package's `GroupMember` owns, KIP-429
cooperative-sticky, only the partitions that move are revoked). Members join, one
leaves cleanly, one is SIGKILLed and is expired by its session timeout; a commit from a
superseded generation (member epoch) is fenced. Then the
server stops and the Spark report (`rebalance report`) explains the rebalances from the event
log. Everything it started is stopped before it returns; the data dir and the HTML report stay
in `demo-output/`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assignors.consumer_protocol import decode_assignment
from coordinator.demo.common import (
    GROUP,
    PARTITIONS,
    RECORDS,
    SESSION_MS,
    STORY_CONFIG,
    TOPIC,
    Say,
    partitions_moved,
    produce,
    produce_confluent,
    supervised,
)
from coordinator.demo.summary import explain
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import RunningServer, WireClient, running_server
from coordinator.wire.api_keys import ApiKey
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.group import ConsumerGroup


@dataclass
class DemoMember:
    name: str
    process: asyncio.subprocess.Process
    partitions: list[int] = field(default_factory=list)
    consumed: int = 0
    reader: asyncio.Task[None] | None = None
    #: Partitions given back since the story last looked (cooperative members report it).
    revoked: list[int] = field(default_factory=list)
    #: Every partition held since the story last looked.
    held: set[int] = field(default_factory=set)
    #: The member id it last reported (with an assignment).
    member_id: str = ""

    async def follow(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            if line["event"] == "assigned":
                self.partitions = line["partitions"]
                self.held.update(self.partitions)
                self.member_id = line.get("member_id") or self.member_id
            elif line["event"] == "consumed":
                self.consumed = line["count"]
            elif line["event"] == "revoked":
                self.revoked += line["partitions"]


async def start_member(server: RunningServer, name: str, protocol: str) -> DemoMember:
    log = (server.data_dir / f"member-{name}.log").open("ab")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "coordinator.demo.member", "--bootstrap", server.bootstrap,
        "--group", GROUP, "--topic", TOPIC, "--name", name, "--session-ms", str(SESSION_MS),
        "--protocol", protocol,
        stdout=asyncio.subprocess.PIPE,
        stderr=log,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    log.close()  # the child has its own handle
    member = DemoMember(name, process)
    member.reader = asyncio.create_task(member.follow())
    return member


class Stage:
    """Waits for the group to settle and narrates what changed."""

    def __init__(
        self,
        server: RunningServer,
        groups: GroupCoordinatorExtension,
        say: Say,
        *,
        cooperative: bool = False,
    ) -> None:
        self.server = server
        self.groups = groups
        self.say = say
        self.cooperative = cooperative
        self.previous: dict[int, str] = {}

    def generation(self) -> int:
        assert self.groups.runtime is not None
        return epoch_of(self.groups.runtime.core.group(GROUP))

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
                and (not self.cooperative or _hold_their_assignments(group, members))
            ):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the group did not settle after: {what}")
            await asyncio.sleep(0.1)
        owners = {p: m.name for m in members for p in m.partitions}
        moved = partitions_moved(self.previous, owners)
        revoked = ""
        if self.cooperative:
            # Members still in the group gave back only what moved away from them (what they
            # held meanwhile and hold no more); the rest they kept consuming throughout.
            taken = sum(len(m.held - set(m.partitions)) for m in members)
            given = sum(len(m.revoked) for m in members)
            revoked = f"; revoked from members that stay: {given} (moved away from them: {taken})"
        for m in members:
            m.revoked.clear()
            m.held = set(m.partitions)
        self.say(
            f"{what}: {EPOCH_NAME[group.group_type]} {epoch_of(group)}, stable after "
            f"{time.monotonic() - started:.1f} s; partitions moved: {moved}{revoked}"
        )
        for m in sorted(members, key=lambda m: m.name):
            self.say(f"    {m.name:<6} {m.partitions}")
        self.previous = owners


def _hold_their_assignments(group: Any, members: list[DemoMember]) -> bool:
    """Whether each member holds exactly what the coordinator's current assignment gives it.

    A cooperative rebalance that takes partitions away is Stable (and every partition still
    held) from its SyncGroup until the members' revocation callbacks have run: without this the
    story would call that first round settled, and the second one, which hands the revoked
    partitions out, would land in the next stage."""
    for m in members:
        member = group.members.get(m.member_id)
        if member is None or not member.assignment:
            return False
        given = sorted(p for _, p in decode_assignment(member.assignment).partitions)
        if given != sorted(m.partitions):
            return False
    return True


#: What the story calls a group's epoch, by group type.
EPOCH_NAME = {"classic": "generation", "consumer": "group epoch"}


def epoch_of(group: Any) -> int:
    """A classic group's generation, a consumer group's group epoch (0: no group)."""
    if group is None:
        return 0
    return int(group.group_epoch if group.group_type == "consumer" else group.generation)


def member_epoch(groups: GroupCoordinatorExtension, member_id: str) -> int:
    """The member epoch a KIP-848 member of the demo's group has reached."""
    assert groups.runtime is not None
    group: object = groups.runtime.core.group(GROUP)
    assert isinstance(group, ConsumerGroup)
    return group.members[member_id].member_epoch


def partition_not_held(groups: GroupCoordinatorExtension, member_id: str) -> int:
    """A partition of the topic the KIP-848 member does not hold now: a commit for it at an
    older member epoch is fenced (Kafka 4.4 lets one through for a partition held since)."""
    assert groups.runtime is not None
    group: object = groups.runtime.core.group(GROUP)
    assert isinstance(group, ConsumerGroup)
    member = group.members[member_id]
    held = {p for owned in (member.assigned, member.pending_revocation) for ps in owned.values()
            for p in ps}  # fmt: skip
    return min(set(range(PARTITIONS)) - held)


async def fenced_commit(
    server: RunningServer, member_id: str, generation: int, version: int = 8, partition: int = 0
) -> str:
    """An OffsetCommit from `member_id` at `generation` (v9+: its member epoch)."""
    client = await WireClient.connect(server.host, server.port)
    try:
        response = await client.request(ApiKey.OFFSET_COMMIT, version, {
            "group_id": GROUP, "generation_id_or_member_epoch": generation,
            "member_id": member_id, "group_instance_id": None,
            "topics": [{"name": TOPIC, "partitions": [{
                "partition_index": partition, "committed_offset": 0, "committed_leader_epoch": -1,
                "committed_metadata": "late commit from a zombie"}]}],
        })  # fmt: skip
    finally:
        await client.close()
    return str(response.topics[0].partitions[0].error_code.name)


async def run_group_story(data_dir: Path, say: Say, protocol: str = "classic") -> None:
    """The story on the group coordinator: classic groups (aiokafka, JoinGroup/SyncGroup), with
    `protocol` "consumer" a KIP-848 group (librdkafka, ConsumerGroupHeartbeat), with
    "cooperative" a classic group of `GroupMember`s rebalancing incrementally (KIP-429)."""
    config = CoordinatorConfig.from_properties(STORY_CONFIG)
    consumer = protocol == "consumer"
    groups = GroupCoordinatorExtension(config)
    members: list[DemoMember] = []
    everyone: list[DemoMember] = []
    async with (
        running_server(topics=[(TOPIC, PARTITIONS)], groups=groups, data_dir=data_dir) as server,
        supervised(members),
    ):
        say(f"server on {server.bootstrap}, data in {data_dir}")
        await (produce_confluent if consumer else produce)(server.bootstrap)
        say(f"produced {RECORDS} records to {TOPIC!r} ({PARTITIONS} partitions)")
        stage = Stage(server, groups, say, cooperative=protocol == "cooperative")
        if consumer:
            say("\nconsumers alice, bob, carol join (librdkafka, group.protocol=consumer):")
        elif protocol == "cooperative":
            say(
                "\nconsumers alice, bob, carol join (aiokafka fetching what a GroupMember owns, "
                "cooperative-sticky):"
            )
        else:
            say("\nconsumers alice, bob, carol join (aiokafka, our sticky assignor):")
        members += [await start_member(server, n, protocol) for n in ("alice", "bob", "carol")]
        everyone += members
        await stage.settle(members, "three members")

        members.append(await start_member(server, "dave", protocol))
        everyone.append(members[-1])
        await stage.settle(members, "\ndave joins")
        stale_generation = stage.generation()
        assert groups.runtime is not None
        group = groups.runtime.core.group(GROUP)
        assert group is not None
        alice_id = next(m.member_id for m in group.members.values() if m.client_id == "alice")
        # KIP-848 fences by the member's own epoch, which it reached reconciling: that one.
        stale_epoch = member_epoch(groups, alice_id) if consumer else stale_generation

        bob = next(m for m in members if m.name == "bob")
        bob.process.send_signal(signal.SIGTERM)  # clean shutdown: LeaveGroup
        await bob.process.wait()
        members.remove(bob)
        how = "a heartbeat with member epoch -1" if consumer else "LeaveGroup"
        await stage.settle(members, f"\nbob leaves cleanly ({how})")

        carol = next(m for m in members if m.name == "carol")
        carol.process.kill()  # a crash: no LeaveGroup, no more heartbeats
        await carol.process.wait()
        members.remove(carol)
        say(f"\ncarol is SIGKILLed; the coordinator waits for her {SESSION_MS} ms session...")
        await stage.settle(members, "carol expired")

        if consumer:
            elsewhere = partition_not_held(groups, alice_id)
            outcome = await fenced_commit(server, alice_id, stale_epoch, 9, elsewhere)
            say(
                f"\na commit from alice's member epoch {stale_epoch} (now "
                f"{member_epoch(groups, alice_id)}) is fenced: {outcome}"
            )
        else:
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


def run_demo(
    say: Say = print,
    output: Path = Path("demo-output"),
    protocol: str = "classic",
    *,
    report: bool = True,
) -> int:
    """Run the demo; its data dir and report stay in `output` (replaced on every run).

    `protocol` "zookeeper" runs the story with Kafka 0.8's ZooKeeper-coordinated consumers,
    "consumer" with KIP-848 consumers (librdkafka, `group.protocol=consumer`), "cooperative"
    with aiokafka consumers on this package's `GroupMember` (KIP-429), "client-balance"
    with TubeMQ's client-side assignment (`coordinator.demo.client_balance`), "cluster" with
    three cluster nodes on a PostgreSQL of its own (`coordinator.demo.cluster`). Without `report`,
    the Spark report is not run (the event log stays for `rebalance report`)."""
    started = time.monotonic()
    if output.exists():
        shutil.rmtree(output)
    output.mkdir(parents=True)  # the demo's own: a data dir is made only inside an existing one
    data_dir = output / "data"
    if protocol == "zookeeper":
        from coordinator.demo.zookeeper import run_zookeeper_story  # the zookeeper extra

        asyncio.run(run_zookeeper_story(data_dir, say))
    elif protocol == "client-balance":
        from coordinator.demo.client_balance import run_client_balance_story

        asyncio.run(run_client_balance_story(data_dir, say))
    elif protocol == "cluster":
        from coordinator.demo.cluster import run_cluster_story  # the cluster extra

        asyncio.run(run_cluster_story(data_dir, say))
    else:
        asyncio.run(run_group_story(data_dir, say, protocol))
    if protocol == "consumer":
        from coordinator.demo.epochs import tell_consumer_epochs

        tell_consumer_epochs(data_dir / "events", GROUP, say)
    if protocol == "cluster":  # each node keeps its own event log; the report reads one
        say(f"\nthe nodes' event logs: {data_dir}/data-N/events (no report of a cluster yet)")
    elif report:
        explain(data_dir / "events", output / "report", say)
    else:
        hint = f"rebalance report {shlex.quote(str(data_dir / 'events'))} --out " + shlex.quote(
            str(output / "report")
        )
        say(f"\nno report (--no-report): {hint} explains it")
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
