"""Mixed groups: `GroupMember` consumers (aiokafka on `IncrementalConsumer`) with librdkafka
(confluent-kafka) consumers against our server, classic cooperative-sticky and KIP-848
(`group.protocol=consumer`), with churn: a member joins, one leaves cleanly, one of ours and one
of librdkafka's are SIGKILLed, the coordinator restarts (the survivors find it again and consume
on), while records are produced to every partition all along.

Every process reports its callbacks and what it consumes with CLOCK_MONOTONIC times
(member_proc.py). The merged log must never show a partition held by two members at once (a
SIGKILLed process holds nothing from the moment it dies), and at the end the survivors hold
every partition exactly once. Each revocation takes a second (the member drains its work), so
each rebalance lasts long enough to watch the members that lose nothing: through every
rebalance they are revoked nothing and keep consuming their partitions, never pausing for as
long as a revocation takes (what a member of an eager, stop-the-world group waits at least).
Members commit what they read when they give partitions back (librdkafka synchronously in its
revocation callback, ours through IncrementalConsumer): every record produced is read, and
none twice except after a crash or a lost lease, from the group's last commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import RunningServer, running_server
from rebalance.config import CoordinatorConfig

pytestmark = [pytest.mark.interop]

TOPIC = "work"
PARTITIONS = 8
ALL = {(TOPIC, p) for p in range(PARTITIONS)}
PROC = Path(__file__).with_name("member_proc.py")
REVOKE_S = 1.0
CALLBACKS = ("revoking", "assigned", "revoked", "lost")
CONFIG = CoordinatorConfig.from_properties(
    {
        "group.initial.rebalance.delay.ms": "200",
        "group.min.session.timeout.ms": "1000",
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.session.timeout.ms": "2000",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "300",
    }
)


@dataclass
class Proc:
    name: str
    process: asyncio.subprocess.Process
    log: list[dict[str, Any]] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            line["who"] = self.name
            self.log.append(line)

    def holding(self, until: float = float("inf")) -> set[tuple[str, int]]:
        held: set[tuple[str, int]] = set()
        for line in self.log:
            if line["t"] > until:
                break
            partitions = {(t, p) for t, p in line.get("partitions", [])}
            if line["event"] == "assigned":
                held |= partitions
            elif line["event"] in ("revoked", "lost"):
                held -= partitions
            elif line["event"] in ("crashed", "closed"):
                held = set()
        return held

    def revoking(self) -> bool:
        """In a revocation callback now (it still holds what it is giving back)."""
        calls = [line["event"] for line in self.log if line["event"] in ("revoking", "revoked")]
        return bool(calls) and calls[-1] == "revoking"

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()
        self.log.append({"t": time.monotonic(), "event": "crashed", "who": self.name})

    async def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(self.process.wait(), 20)
        if self.reader is not None:
            await self.reader


async def spawn(bootstrap: str, kind: str, name: str, protocol: str) -> Proc:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(PROC), "--kind", kind, "--bootstrap", bootstrap, "--group", "mixed",
        "--topic", TOPIC, "--name", name, "--session-ms", "2000", "--protocol", protocol,
        "--revoke-ms", str(int(REVOKE_S * 1000)),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    proc = Proc(name, process)
    proc.reader = asyncio.create_task(proc.read())
    return proc


def never_shared(procs: list[Proc]) -> None:
    lines = sorted((line for p in procs for line in p.log), key=lambda line: line["t"])
    held: dict[str, set[tuple[str, int]]] = {}
    for line in lines:
        who, event = line["who"], line["event"]
        partitions = {(t, p) for t, p in line.get("partitions", [])}
        mine = held.setdefault(who, set())
        if event == "assigned":
            for other, theirs in held.items():
                assert other == who or not (theirs & partitions), (
                    f"{sorted(theirs & partitions)} assigned to {who} at {line['t']:.3f} "
                    f"while {other} holds them"
                )
            mine |= partitions
        elif event in ("revoked", "lost"):
            mine -= partitions
        elif event in ("crashed", "closed"):
            mine.clear()


async def until_split(
    procs: list[Proc], groups: GroupCoordinatorExtension, timeout: float = 40.0
) -> None:
    """Until the coordinator calls the group Stable and the members' callbacks say they hold
    every partition once, none of them giving any back (a split seen while the group still
    rebalances does not count: a classic group is Stable while members revoke for its next
    round)."""
    end = time.monotonic() + timeout
    while True:
        holdings = [p.holding() for p in procs]
        exact = set().union(*holdings) == ALL and sum(len(h) for h in holdings) == PARTITIONS
        assert groups.runtime is not None
        group = groups.runtime.core.group("mixed")
        stable = group is not None and group.kafka_state == "Stable"
        if exact and all(holdings) and stable and not any(p.revoking() for p in procs):
            return
        if time.monotonic() > end:
            raise AssertionError({p.name: sorted(p.holding()) for p in procs})
        await asyncio.sleep(0.1)


@dataclass
class Phase:
    """One churn event: from the test's action until it saw the partitions split again."""

    what: str
    start: float
    end: float
    acted_on: set[str]
    crash: bool = False


def kept_consuming(procs: list[Proc], phase: Phase) -> list[str]:
    """Check, for one phase, that members never give back a partition they keep, and that the
    members losing nothing are revoked nothing and never pause consuming their partitions for as
    long as a revocation takes during the rebalance; returns those members' names."""
    lines = [line for p in procs for line in p.log if phase.start < line["t"] <= phase.end]
    callbacks = [line["t"] for line in lines if line["event"] in CALLBACKS]
    # The rebalance: from the first callback (a crash: from the kill, the dead member's
    # partitions are nobody's from then) to the last one.
    opened = phase.start if phase.crash else min(callbacks)
    closed = max(callbacks)
    assert closed - opened >= REVOKE_S * 0.9, (phase.what, opened, closed)
    subjects = []
    for proc in procs:
        if proc.name in phase.acted_on or proc.log[0]["t"] > phase.start:
            continue
        before, after = proc.holding(phase.start), proc.holding(phase.end)
        mine = [line for line in proc.log if phase.start < line["t"] <= phase.end]
        given = {(t, p) for line in mine if line["event"] == "revoked"
                 for t, p in line["partitions"]}  # fmt: skip
        taken = {(t, p) for line in mine if line["event"] == "assigned"
                 for t, p in line["partitions"]}  # fmt: skip
        assert not given & after and not taken & before, (phase.what, proc.name, given, taken)
        if not before or not before <= after:
            continue
        subjects.append(proc.name)
        assert not [line for line in mine if line["event"] in ("revoking", "revoked", "lost")]
        consumed = [line["t"] for line in mine if line["event"] == "consumed"
                    and {(t, p) for t, p in line["partitions"]} & before]  # fmt: skip
        # Never stopped for as long as a revocation takes (what a stop-the-world member waits at
        # least); gaps of a fetch or two are normal (0.7 s seen from librdkafka at load 4).
        points = [opened, *(t for t in consumed if opened <= t <= closed), closed]
        longest = max(b - a for a, b in itertools.pairwise(points))
        assert longest < REVOKE_S * 0.9, (phase.what, proc.name, opened, closed, consumed)
    return subjects


async def keep_producing(bootstrap: str, stop: asyncio.Event) -> None:
    """A record to every partition every 50 ms until `stop`."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        while not stop.is_set():
            for partition in range(PARTITIONS):
                with contextlib.suppress(KafkaError):  # the coordinator's restart: an outage
                    await producer.send(TOPIC, b"work", partition=partition)
            await asyncio.sleep(0.05)
    finally:
        await producer.stop()


class Coordinator:
    """Our server in this process, on a data dir that outlives it: stopped and started again
    on the same port, it reloads its groups (a coordinator restart)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.groups = GroupCoordinatorExtension(CONFIG)
        self.bootstrap = ""
        self._running: contextlib.AbstractAsyncContextManager[RunningServer] | None = None

    async def start(self, port: int = 0) -> None:
        self.groups = GroupCoordinatorExtension(CONFIG)
        self._running = running_server(
            topics=[(TOPIC, PARTITIONS)], groups=self.groups, data_dir=self.data_dir, port=port
        )
        server = await self._running.__aenter__()
        self.bootstrap = server.bootstrap

    async def stop(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            await running.__aexit__(None, None, None)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_mixed_incremental_group_under_churn(protocol: str, tmp_path: Path) -> None:
    coordinator = Coordinator(tmp_path)
    await coordinator.start()
    bootstrap = coordinator.bootstrap
    procs: list[Proc] = []
    phases: list[Phase] = []
    stop_producing = asyncio.Event()
    producing = asyncio.create_task(keep_producing(bootstrap, stop_producing))
    try:
        for kind, name in [("group-member", "ours-1"), ("confluent", "rdk-1"),
                           ("group-member", "ours-2"), ("confluent", "rdk-2")]:  # fmt: skip
            procs.append(await spawn(bootstrap, kind, name, protocol))
        await until_split(procs, coordinator.groups)
        start = time.monotonic()
        procs.append(await spawn(bootstrap, "group-member", "ours-3", protocol))
        await until_split(procs, coordinator.groups)
        phases.append(Phase("ours-3 joins", start, time.monotonic(), {"ours-3"}))
        start = time.monotonic()
        leaving = procs.pop(0)  # ours-1 leaves cleanly
        await leaving.stop()
        await until_split(procs, coordinator.groups)
        phases.append(Phase("ours-1 leaves", start, time.monotonic(), {"ours-1"}))
        start = time.monotonic()
        crashed = [procs.pop(0), procs.pop(0)]  # rdk-1 and ours-2: SIGKILL
        for proc in crashed:
            await proc.kill()
        await until_split(procs, coordinator.groups)
        phases.append(Phase("rdk-1, ours-2 killed", start, time.monotonic(),
                            {"rdk-1", "ours-2"}, crash=True))  # fmt: skip
        # The coordinator restarts: the survivors find it again and go on consuming.
        await coordinator.stop()
        await coordinator.start(port=int(bootstrap.rpartition(":")[2]))
        back = time.monotonic()
        await until_split(procs, coordinator.groups)
        await until_consuming(procs, back)
        stop_producing.set()
        await producing
        ends = await end_offsets(bootstrap)
        await until_read_up_to(procs, ends)
        survivors = list(procs)
        await asyncio.gather(*(proc.stop() for proc in survivors))
    finally:
        stop_producing.set()
        await producing
        for proc in procs:
            if proc.process.returncode is None:
                proc.process.kill()
                await proc.process.wait()
        await coordinator.stop()
    everyone = [leaving, *crashed, *survivors]
    never_shared(everyone)
    assert leaving.log[-1]["event"] == "closed"
    assert any(line["event"] == "revoked" for line in leaving.log)
    for phase in phases:
        subjects = kept_consuming(everyone, phase)
        assert subjects, f"{phase.what}: every member lost something"
    delivered_outside_the_windows_once(everyone, ends)


def readings(procs: list[Proc]) -> dict[tuple[str, int], list[tuple[float, str, int]]]:
    """(time, member, offset) of every record read, by partition."""
    read: dict[tuple[str, int], list[tuple[float, str, int]]] = {}
    for proc in procs:
        for line in proc.log:
            if line["event"] != "consumed":
                continue
            for topic, partition, first, last, count in line["offsets"]:
                assert count == last - first + 1, line  # one batch: contiguous offsets
                read.setdefault((topic, partition), []).extend(
                    (line["t"], proc.name, offset) for offset in range(first, last + 1)
                )
    return read


def delivered_outside_the_windows_once(procs: list[Proc], ends: dict[tuple[str, int], int]) -> None:
    """Every record produced was read. A record is read again only by a member that started
    from the group's committed offset at or below it, and only after the member that read it
    before crashed or lost the partition without committing (the documented window: from the
    last commit; these members commit when they give partitions back); a clean hand-over
    commits first, so nothing is read twice across it."""
    commits = sorted((line["t"], topic, partition, offset) for proc in procs for line in proc.log
                     if line["event"] == "committed"
                     for topic, partition, offset in line["offsets"])  # fmt: skip
    by_name = {proc.name: proc for proc in procs}
    read = readings(procs)
    for tp, end in ends.items():
        seen = sorted(read.get(tp, []))
        missing = set(range(end)) - {offset for _, _, offset in seen}
        assert not missing, (tp, sorted(missing)[:10], len(missing))
        last_read: dict[int, str] = {}
        for when, who, offset in seen:
            before = last_read.get(offset)
            last_read[offset] = who
            if before is None:
                continue
            committed = max((o for t, *p, o in commits if tuple(p) == tp and t < when), default=0)
            assert committed <= offset, (
                f"{tp} offset {offset} read by {before}, then again by {who} at {when:.3f} "
                f"although {committed} was committed"
            )
            ended = how_it_let_go(by_name[before], tp, when)
            assert ended in ("crashed", "lost", "commit_failed"), (tp, offset, before, ended)


def how_it_let_go(proc: Proc, tp: tuple[str, int], before: float) -> str | None:
    """How `proc` last stopped holding `tp` before `before`: "revoked" (committed first),
    "commit_failed", "lost" or "crashed" (None: it still held it)."""
    ended = None
    previous = ""
    for line in proc.log:
        if line["t"] >= before:
            break
        if line["event"] == "crashed":
            ended = "crashed"
        elif line["event"] in ("revoked", "lost") and list(tp) in line["partitions"]:
            clean = line["event"] == "revoked" and previous != "commit_failed"
            ended = line["event"] if clean or line["event"] == "lost" else "commit_failed"
        previous = line["event"]
    return ended


async def end_offsets(bootstrap: str) -> dict[tuple[str, int], int]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    client = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await client.start()
    try:
        ends = await client.end_offsets([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    finally:
        await client.stop()
    return {(tp.topic, tp.partition): int(offset) for tp, offset in ends.items()}


async def until_read_up_to(
    procs: list[Proc], ends: dict[tuple[str, int], int], timeout: float = 30.0
) -> None:
    """Until the members have read every partition up to `ends`."""
    end = time.monotonic() + timeout
    while True:
        read = readings(procs)
        behind = {tp: n for tp, n in ends.items()
                  if n and max((o for *_, o in read.get(tp, [])), default=-1) < n - 1}  # fmt: skip
        if not behind:
            return
        assert time.monotonic() < end, behind
        await asyncio.sleep(0.2)


async def until_consuming(procs: list[Proc], since: float, timeout: float = 30.0) -> None:
    """Until every member consumed records it holds after `since`."""
    end = time.monotonic() + timeout
    while not all(
        any(line["event"] == "consumed" and line["t"] > since for line in p.log) for p in procs
    ):
        assert time.monotonic() < end, [p.name for p in procs]
        await asyncio.sleep(0.1)
