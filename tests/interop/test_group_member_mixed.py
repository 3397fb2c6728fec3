"""Mixed groups: `GroupMember` processes with librdkafka (confluent-kafka) consumers against
our server, classic cooperative-sticky and KIP-848 (`group.protocol=consumer`), with churn:
members join, one leaves cleanly, one of ours and one of librdkafka's are SIGKILLed.

Every process reports its callbacks with CLOCK_MONOTONIC times (member_proc.py); the merged log
must never show a partition held by two members at once (a SIGKILLed process holds nothing from
the moment it dies), and at the end the survivors hold every partition exactly once.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from coordinator.groups import GroupCoordinatorExtension
from coordinator.testing import running_server
from rebalance.config import CoordinatorConfig

pytestmark = [pytest.mark.interop]

TOPIC = "work"
PARTITIONS = 8
ALL = {(TOPIC, p) for p in range(PARTITIONS)}
PROC = Path(__file__).with_name("member_proc.py")
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

    def holding(self) -> set[tuple[str, int]]:
        held: set[tuple[str, int]] = set()
        for line in self.log:
            partitions = {(t, p) for t, p in line.get("partitions", [])}
            if line["event"] == "assigned":
                held |= partitions
            elif line["event"] in ("revoked", "lost"):
                held -= partitions
            elif line["event"] in ("crashed", "closed"):
                held = set()
        return held

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
        else:
            mine.clear()


async def until_split(procs: list[Proc], timeout: float = 40.0) -> None:
    end = time.monotonic() + timeout
    while True:
        holdings = [p.holding() for p in procs]
        exact = set().union(*holdings) == ALL and sum(len(h) for h in holdings) == PARTITIONS
        if exact and all(holdings):
            return
        if time.monotonic() > end:
            raise AssertionError({p.name: sorted(p.holding()) for p in procs})
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_mixed_incremental_group_under_churn(protocol: str) -> None:
    async with running_server(
        topics=[(TOPIC, PARTITIONS)], groups=GroupCoordinatorExtension(CONFIG)
    ) as server:
        procs: list[Proc] = []
        try:
            for kind, name in [("group-member", "ours-1"), ("confluent", "rdk-1"),
                               ("group-member", "ours-2"), ("confluent", "rdk-2")]:  # fmt: skip
                procs.append(await spawn(server.bootstrap, kind, name, protocol))
            await until_split(procs)
            procs.append(await spawn(server.bootstrap, "group-member", "ours-3", protocol))
            await until_split(procs)
            leaving = procs.pop(0)  # ours-1 leaves cleanly
            await leaving.stop()
            await until_split(procs)
            crashed = [procs.pop(0), procs.pop(0)]  # rdk-1 and ours-2: SIGKILL
            for proc in crashed:
                await proc.kill()
            await until_split(procs)
            survivors = list(procs)
            for proc in survivors:
                await proc.stop()
        finally:
            for proc in procs:
                if proc.process.returncode is None:
                    proc.process.kill()
                    await proc.process.wait()
        never_shared([leaving, *crashed, *survivors])
        assert leaving.log[-1]["event"] == "closed"
        assert any(line["event"] == "revoked" for line in leaving.log)
