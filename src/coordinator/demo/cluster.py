"""`rebalance demo --protocol cluster`: three coordinator nodes on one PostgreSQL, the busiest
killed, another frozen past its lease, told from what the clients saw and what PostgreSQL
recorded.

It starts its own PostgreSQL (Debian's binaries, a temporary data dir, a free loopback port:
`coordinator.testing.peers.postgresql`) and three `rebalance serve --cluster` node processes
(`coordinator.testing.cluster_nodes`) with short leases (2 s, renewed every 0.5 s). Two groups
commit their positions ten times a second (`coordinator.demo.cluster_member`): demo-billing, of
unmodified aiokafka consumers, and demo-audit, of this package's `GroupMember`s
(cooperative-sticky). Then:

1. the busiest coordinator (the most commits acknowledged in the last two seconds) is
   SIGKILLed: its groups wait for its leases to lapse on PostgreSQL's clock, another node takes
   their partitions at the next epoch and loads them; the failover time is from the kill to the
   first commit the successor acknowledged, and the successor's first OffsetFetch must return
   every offset acknowledged before the kill;
2. a fourth node joins and the others hand it its share at once (released, not lapsed);
3. the node coordinating the most groups is frozen (SIGSTOP) until its groups have moved, with
   an OffsetFetch queued on its socket, then resumed (SIGCONT): it reads the queued request
   first and must answer NOT_COORDINATOR, and acknowledges no commit for the groups it lost;
4. the members stop; each group's committed offsets, read at its coordinator, must be at or past
   the last offset acknowledged for every partition.

It prints the ownership history of both groups' partitions (who coordinated which group when),
the failover times, the generations and epochs before and after, and the lost commits (0). The
nodes' event logs stay in the data dir (`data-N/events`); the report does not read a cluster's
several logs yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from coordinator.demo.cluster_facts import (
    RETRIED,
    Ack,
    Failover,
    Member,
    StoryFacts,
    acks_of,
    fetch_offsets,
    last_acked,
    tell_history,
)
from coordinator.demo.common import Say, supervised
from coordinator.errors import OperationalError
from coordinator.testing.cluster_nodes import ClusterNodes
from coordinator.testing.peers.postgresql import PostgreSQLServer, PostgreSQLUnavailable, bin_dir
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient
from coordinator.zookeeper.server import die_with_parent
from rebalance.placement import partition_for

TOPIC = "orders"
PARTITIONS = 4
LEASE_MS = 2000
RENEW_MS = 500
GROUPS = {"demo-billing": ("aiokafka", "alice", "bob"), "demo-audit": ("member", "carol", "dave")}
"""Group -> the client its members run, and their names."""
SETTINGS = {
    "cluster.lease.ms": LEASE_MS,
    "cluster.lease.renew.ms": RENEW_MS,
    "group.initial.rebalance.delay.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 1000,
}
REQUEST_TIMEOUT_MS = 4000
"""The members' request timeout: how long a client waits on a frozen coordinator."""
BUSY_WINDOW_S = 2.0
NO_POSTGRESQL = (
    "the cluster demo runs its own PostgreSQL and this machine has none: install Debian's "
    "postgresql package (apt-get install postgresql; in a checkout, scripts/ensure-postgresql), "
    "or set POSTGRESQL_BINDIR to the bin folder of another installation"
)


def start_postgresql() -> PostgreSQLServer:
    """The demo's own server; an `OperationalError` in one line if there is none to start."""
    try:
        binaries = bin_dir()
    except PostgreSQLUnavailable:
        raise OperationalError(NO_POSTGRESQL) from None
    if not (binaries / "postgres").exists() or not (binaries / "initdb").exists():
        raise OperationalError(NO_POSTGRESQL)
    try:
        return PostgreSQLServer.start()
    except PostgreSQLUnavailable as exc:
        raise OperationalError(" ".join(str(exc).split())) from None


async def until(what: str, condition: Callable[[], bool], timeout: float = 90) -> float:
    """Seconds until `condition()` held; RuntimeError (the demo is stuck) after `timeout`."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > timeout:
            raise RuntimeError(f"the demo got stuck: {what}")
        await asyncio.sleep(0.05)
    return time.monotonic() - began


class ClusterStory:
    def __init__(self, data_dir: Path, url: str, say: Say) -> None:
        self.say = say
        self.nodes = ClusterNodes(
            url, data_dir, topics=[f"{TOPIC}:{PARTITIONS}"], settings=SETTINGS
        )
        self.members: list[Member] = []
        self.facts = StoryFacts()
        self.origin = time.monotonic()
        self.origin_wall = time.time()

    def node_of(self, coordinator: object) -> int | None:
        if isinstance(coordinator, int):
            return coordinator
        for node in self.nodes.nodes.values():
            if node.address == coordinator:
                return node.node_id
        return None

    async def start_member(self, group: str, client: str, name: str) -> None:
        log = (self.nodes.root / f"member-{name}.log").open("ab")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "coordinator.demo.cluster_member",
            "--bootstrap", ",".join(self.nodes.bootstrap()), "--group", group, "--topic", TOPIC,
            "--name", name, "--client", client, "--origin", repr(self.origin),
            "--request-timeout-ms", str(REQUEST_TIMEOUT_MS),
            stdout=asyncio.subprocess.PIPE, stderr=log, preexec_fn=die_with_parent,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )  # fmt: skip
        log.close()
        member = Member(name, group, client, process, self.node_of)
        member.reader = asyncio.create_task(member.follow())
        self.members.append(member)

    def owner(self, group: str) -> tuple[int | None, int]:
        return self.nodes.owner(group)

    def generation(
        self, group: str, before: float | None = None, after: float | None = None
    ) -> int:
        acks = [
            a for a in acks_of(self.members, group)
            if (before is None or a.at <= before) and (after is None or a.at > after)
        ]  # fmt: skip
        if not acks:
            return -1
        return (acks[-1] if after is None else acks[0]).generation

    def busy(self) -> dict[int, int]:
        """Node -> commits it acknowledged in the last `BUSY_WINDOW_S`."""
        since = time.monotonic() - BUSY_WINDOW_S
        counts: dict[int, int] = {}
        for member in self.members:
            for ack in member.acks:
                if ack.at > since and ack.node is not None:
                    counts[ack.node] = counts.get(ack.node, 0) + 1
        return counts

    async def busiest(self) -> tuple[int, list[str], dict[str, int], int]:
        """The node coordinating the most groups, then acknowledging the most commits in the
        last `BUSY_WINDOW_S`: its id, groups, their partitions' epochs, its commit count."""
        await asyncio.sleep(BUSY_WINDOW_S)
        busy = self.busy()
        owners = {g: await asyncio.to_thread(self.owner, g) for g in GROUPS}
        held: dict[int, list[str]] = {}
        for group, (owner, _) in owners.items():
            if owner is not None:
                held.setdefault(owner, []).append(group)
        if not held:
            raise RuntimeError("the demo got stuck: no node coordinates the groups")
        chosen = max(held, key=lambda n: (len(held[n]), busy.get(n, 0)))
        epochs = {g: owners[g][1] for g in held[chosen]}
        return chosen, held[chosen], epochs, busy.get(chosen, 0)

    async def committing(self, what: str, after: float | None = None) -> None:
        """Until every group has commits acknowledged after `after` (default: now)."""
        since = time.monotonic() if after is None else after

        def fresh() -> bool:
            return all(any(a.at > since for a in acks_of(self.members, g)) for g in GROUPS)

        await until(what, fresh)

    async def failover(self, group: str, fault: str, node: int, at: float, epoch: int) -> Failover:
        """Wait for `group` to move off `node` and commit at its successor; measure it."""
        acked_before = last_acked(self.members, group, before=at)
        fetched: dict[int, int] = {}

        async def first_fetch() -> None:
            while True:
                owner, _ = await asyncio.to_thread(self.owner, group)
                if owner is not None and owner != node:
                    answered = self.nodes.nodes[owner]
                    with contextlib.suppress(OSError):
                        code, offsets = await fetch_offsets("127.0.0.1", answered.port, group)
                        if code == "NONE":
                            fetched.update(offsets)
                            return
                        if code not in RETRIED:
                            raise RuntimeError(f"OffsetFetch of {group} at the successor: {code}")
                await asyncio.sleep(0.02)

        def after_fault() -> list[Ack]:
            # Not the faulted node's: a reply it sent before the fault may arrive just after.
            return [a for a in acks_of(self.members, group) if a.at > at and a.node != node]

        await asyncio.wait_for(first_fetch(), 90)
        await until(f"{group}'s first commit after the {fault}", lambda: bool(after_fault()))
        first = after_fault()[0]
        _, epoch_after = await asyncio.to_thread(self.owner, group)
        return Failover(
            group, fault, node, first.node if first.node is not None else -1, first.at - at,
            epoch, epoch_after, self.generation(group, before=at), first.generation,
            acked_before, fetched,
        )  # fmt: skip

    def tell_failover(self, f: Failover) -> None:
        kept = "every one" if f.kept else "NOT every one"
        self.say(
            f"    {f.group}: node {f.node} -> node {f.successor}, partition epoch "
            f"{f.epoch_before} -> {f.epoch_after}; first commit acknowledged by node "
            f"{f.successor} {f.seconds:.2f} s after the {f.fault}; generation "
            f"{f.generation_before} before, {f.generation_after} after"
        )
        self.say(
            f"      node {f.successor}'s first OffsetFetch: {kept} of the "
            f"{len(f.acked_before)} partitions at or past its last offset acknowledged before"
        )

    async def kill_busiest(self) -> None:
        victim, groups, epochs, busy = await self.busiest()
        self.say(
            f"\nnode {victim} is the busiest coordinator ({', '.join(groups)}; {busy} commits "
            f"acknowledged in the last {BUSY_WINDOW_S:.0f} s): SIGKILL. Its leases "
            f"lapse on PostgreSQL's clock after at most {LEASE_MS} ms, then another node takes "
            "its partitions at the next epoch and loads them"
        )
        node = self.nodes.nodes[victim]
        at = time.monotonic()
        node.process.kill()
        await node.process.wait()
        self.facts.killed = victim
        for group in groups:
            failover = await self.failover(group, "SIGKILL", victim, at, epochs[group])
            self.facts.failovers.append(failover)
            self.tell_failover(failover)

    async def replacement(self) -> None:
        launched = time.monotonic()
        await self.nodes.start(4)
        await self.nodes.balanced()
        self.say(
            f"\nnode 4 joins: the others hand it its share at once (released, not lapsed); "
            f"it holds 16-17 partitions {time.monotonic() - launched:.1f} s after its launch "
            "(the Python process's start included)"
        )
        await self.committing("the groups committing after node 4 joined")
        self.tell_coordinators()

    def tell_coordinators(self) -> None:
        for group in GROUPS:
            owner, epoch = self.owner(group)
            self.say(
                f"    {group}: coordinated by node {owner} (partition "
                f"{partition_for(group)}@{epoch}); generation {self.generation(group)}"
            )

    async def freeze(self) -> None:
        frozen, groups, epochs, _ = await self.busiest()
        node = self.nodes.nodes[frozen]
        self.say(
            f"\nnode {frozen} coordinates {', '.join(groups)}: SIGSTOP (a long pause). Its "
            "leases lapse while it sleeps and the others take its partitions; its clients wait "
            f"out their request timeout ({REQUEST_TIMEOUT_MS} ms) on its silent socket first"
        )
        probes = {g: await WireClient.connect("127.0.0.1", node.port) for g in groups}
        at = time.monotonic()
        os.kill(node.process.pid, signal.SIGSTOP)
        try:
            self.facts.frozen = frozen
            for group in groups:
                failover = await self.failover(group, "SIGSTOP", frozen, at, epochs[group])
                self.facts.failovers.append(failover)
                self.tell_failover(failover)
            for group, client in probes.items():  # read first once it resumes
                request = {"groups": [{"group_id": group, "topics": None}]}
                await client.send(client.encode(ApiKey.OFFSET_FETCH, 8, request))
        finally:
            os.kill(node.process.pid, signal.SIGCONT)
        resumed = time.monotonic()
        for group, client in probes.items():
            try:
                _, answer = await asyncio.wait_for(client.read_response(ApiKey.OFFSET_FETCH, 8), 30)
                self.facts.probes[group] = answer.groups[0].error_code.name.upper()
            finally:
                await client.close()
        self.say(
            f"  node {frozen} resumes (SIGCONT) {resumed - at:.1f} s after the freeze; the "
            "OffsetFetch it finds on its socket is answered "
            + ", ".join(f"{code} for {g}" for g, code in self.facts.probes.items())
        )
        took = await self.nodes.balanced()
        await self.committing("the groups committing after the freeze", after=resumed)
        self.facts.acks_from_deposed = await asyncio.to_thread(self.deposed_acks, frozen, resumed)
        self.say(
            f"  it rejoins and gets its share back in {took:.1f} s; commits it acknowledged for "
            f"the groups it lost, until it held one again: {self.facts.acks_from_deposed}"
        )

    def deposed_acks(self, frozen: int, at: float) -> int:
        """Acks from `frozen` after it resumed (`at`) for a group it lost, before it next took
        that group's partition (from the ownership history: PostgreSQL's wall clock, this
        host's)."""
        changes = self.nodes.status(2000).changes
        count = 0
        for group in self.facts.probes:
            partition = partition_for(group)
            retaken = [
                c.at.timestamp() - self.origin_wall + self.origin
                for c in changes
                if c.partition == partition and c.owner == frozen
                and c.at.timestamp() - self.origin_wall + self.origin > at
            ]  # fmt: skip
            until_at = min(retaken, default=float("inf"))
            count += sum(
                1 for a in acks_of(self.members, group) if a.node == frozen and at < a.at < until_at
            )
        return count

    async def finish(self) -> None:
        for member in self.members:
            member.process.send_signal(signal.SIGTERM)
        for member in self.members:
            await member.process.wait()
            if member.reader is not None:
                await member.reader
        for group in GROUPS:
            self.facts.last_acked[group] = last_acked(self.members, group)
            while True:
                owner, _ = await asyncio.to_thread(self.owner, group)
                if owner is not None:
                    code, offsets = await fetch_offsets(
                        "127.0.0.1", self.nodes.nodes[owner].port, group
                    )
                    if code == "NONE":
                        self.facts.committed[group] = offsets
                        break
                await asyncio.sleep(0.05)
        self.facts.changes = list(reversed(self.nodes.status(2000).changes))
        self.say(
            "\nmembers stopped; each group's offsets read at its coordinator (OffsetFetch) against "
            "the last offset acknowledged for each partition:"
        )
        for group in GROUPS:
            acked, committed = self.facts.last_acked[group], self.facts.committed[group]
            behind = sum(1 for p, o in acked.items() if committed.get(p, -1) < o)
            count = sum(len(a.offsets) for a in acks_of(self.members, group))
            self.say(
                f"    {group}: {len(acked)} partitions, {count} offsets acknowledged in all; "
                f"committed behind the last acknowledged: {behind}"
            )
        self.say(f"acknowledged commits lost: {self.facts.lost}")

    async def run(self) -> StoryFacts:
        async with supervised(self.members):
            try:
                await asyncio.gather(*(self.nodes.start(n) for n in (1, 2, 3)))
                await self.nodes.balanced()
                self.say(
                    "nodes 1, 2, 3 on " + ", ".join(self.nodes.bootstrap()) + " share the 50 "
                    f"__consumer_offsets partitions, 16-17 each (leases of {LEASE_MS} ms, "
                    f"renewed every {RENEW_MS} ms)"
                )
                for group, (client, *names) in GROUPS.items():
                    for name in names:
                        await self.start_member(group, client, name)
                self.say(
                    "\ndemo-billing: aiokafka consumers alice and bob; demo-audit: GroupMembers "
                    "carol and dave (cooperative-sticky); each member commits its position for "
                    "its partitions of 'orders' ten times a second (offset: ms since the start)"
                )
                await self.committing("the groups' first commits")
                self.tell_coordinators()
                await self.kill_busiest()
                await self.replacement()
                await self.freeze()
                await self.finish()
            finally:
                await self.nodes.stop_all()
        tell_history(
            self.say, self.facts.changes, {g: partition_for(g) for g in GROUPS}, self.origin_wall
        )
        return self.facts


async def run_cluster_story(data_dir: Path, say: Say) -> StoryFacts:
    """The story on a PostgreSQL of its own; its facts (what the test of the demo checks)."""
    server = await asyncio.to_thread(start_postgresql)
    try:
        say(
            f"PostgreSQL on 127.0.0.1:{server.port} (its own temporary data dir), started in "
            f"{server.started_in_s:.1f} s"
        )
        return await ClusterStory(data_dir, server.url(), say).run()
    finally:
        await asyncio.to_thread(server.stop)
