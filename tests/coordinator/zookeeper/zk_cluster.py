"""Helpers for the ZooKeeper-mode tests: a broker registered in ZooKeeper, records produced to
it, consumers in processes of their own, and what ZooKeeper says about the group."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from coordinator.testing.server import RunningServer, WireClient, record_batch, running_server
from coordinator.zookeeper.broker import ZooKeeperBrokerRegistration
from coordinator.zookeeper.client import ZooKeeper
from coordinator.zookeeper.server import die_with_parent, free_port
from rebalance.zookeeper.formats import owners_dir

SESSION_MS = 1500
BACKOFF_MS = 300
RETRIES = 10
"""More than 0.8's 4: consumers that start together can exhaust 4 short back-offs while the
others still hold what they must release (0.8's rebalance storm; the tests of the retry budget
are in test_consumer_rebalance)."""


@asynccontextmanager
async def zk_broker(
    connect: str, topics: Sequence[tuple[str, int]], data_dir: Path | None = None
) -> AsyncIterator[RunningServer]:
    """A node registered in ZooKeeper as broker 1, hosting `topics` (on a free port; in
    `data_dir` when given, so a restart keeps the records)."""
    registration = ZooKeeperBrokerRegistration(connect)
    async with running_server(
        topics=topics, extensions=[registration], port=free_port(), groups=False,
        data_dir=data_dir,
    ) as node:  # fmt: skip
        await registration.settled()
        yield node


async def produce(
    node: RunningServer, topic: str, partitions: int, count: int, start: int = 0
) -> None:
    """`count` records "<topic>-<i>", i from `start`, spread over the partitions (Produce v3)."""
    client = await WireClient.connect(node.host, node.port)
    try:
        for p in range(partitions):
            values = [
                f"{topic}-{i}".encode() for i in range(start, start + count) if i % partitions == p
            ]
            if not values:
                continue
            response = await client.request(0, 3, {
                "transactional_id": None, "acks": -1, "timeout": 5000,
                "topic_data": [{"name": topic, "partition_data": [
                    {"index": p, "records": record_batch(values)}]}],
            })  # fmt: skip
            assert response.responses[0].partition_responses[0].error_code.value == 0
    finally:
        await client.close()


async def owners(zk: ZooKeeper, group: str, topic: str) -> dict[int, str]:
    """partition -> owning thread id, as `/consumers/<group>/owners/<topic>` says now."""
    result = {}
    for name in await zk.children(owners_dir(group, topic)):
        stored = await zk.get_or_none(f"{owners_dir(group, topic)}/{name}")
        if stored is not None:
            result[int(name)] = stored[0].decode()
    return result


async def eventually(
    check: Callable[[], Awaitable[bool] | bool],
    timeout: float = 20.0,
    detail: Callable[[], object] = lambda: "",
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time {detail()}")
        await asyncio.sleep(0.05)


class Member:
    """`python -m coordinator.zookeeper.member` in its own process, its reports collected."""

    def __init__(self, process: asyncio.subprocess.Process, name: str) -> None:
        self.process = process
        self.name = name
        self.consumer_id = ""
        self.partitions: list[tuple[str, int]] = []
        self.rebalances = 0
        self.failed = 0
        self.consumed = 0
        self.records: list[tuple[str, int, int, str]] = []
        self.reader = asyncio.get_running_loop().create_task(self._follow())

    @classmethod
    async def start(cls, connect: str, group: str, name: str, *args: str,
                    event_log: Path | None = None) -> Member:  # fmt: skip
        command = [
            sys.executable, "-m", "coordinator.zookeeper.member", "--zookeeper", connect,
            "--group", group, "--name", name, "--session-ms", str(SESSION_MS),
            "--backoff-ms", str(BACKOFF_MS), "--retries", str(RETRIES), "--report-records", *args,
        ]  # fmt: skip
        if event_log is not None:
            command += ["--event-log", str(event_log)]
        process = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            preexec_fn=die_with_parent,
        )
        return cls(process, name)

    async def _follow(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line: dict[str, Any] = json.loads(raw)
            if line["event"] == "started":
                self.consumer_id = line["consumer"]
            elif line["event"] == "assigned":
                self.partitions = [tuple(tp) for tp in line["partitions"]]  # type: ignore[misc]
                self.rebalances += 1
            elif line["event"] == "rebalance_failed":
                self.failed += 1
            elif line["event"] == "consumed":
                self.consumed = line["count"]
                self.records += [tuple(r) for r in line.get("records", [])]  # type: ignore[misc]

    def __repr__(self) -> str:
        return (
            f"<{self.name}: {self.partitions} rebalances={self.rebalances} failed={self.failed} "
            f"consumed={self.consumed} exit={self.process.returncode}>"
        )

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        code = await self.process.wait()
        await self.reader
        return code

    async def kill(self) -> None:
        self.process.kill()
        await self.process.wait()
        self.reader.cancel()
