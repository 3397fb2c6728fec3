"""`rebalance serve --cluster`: three node processes on a real PostgreSQL share the 50
`__consumer_offsets` partitions. Every node names a group's owner in FindCoordinator; when the
owner is killed (SIGKILL) another node takes its partitions over after the lease and serves
every acknowledged commit; SIGTERM hands them over at once; a node frozen (SIGSTOP) past its
lease and resumed answers NOT_COORDINATOR for what it lost. `rebalance cluster status` shows it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError
from kio.schema.errors import ErrorCode
from serve_process import REBALANCE, STARTED, run_rebalance

from coordinator.testing.server import WireClient
from coordinator.wire.api_keys import ApiKey
from rebalance.placement import partition_for

LEASE_MS = 2000
FAST_LEASES = ("--set", f"cluster.lease.ms={LEASE_MS}", "--set", "cluster.lease.renew.ms=500")
TOPIC = "orders"


@dataclass
class Node:
    node_id: int
    process: asyncio.subprocess.Process
    port: int
    log: Path


class Cluster:
    """`rebalance serve --cluster` processes of one test, on one PostgreSQL database."""

    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root
        self.nodes: dict[int, Node] = {}
        self.lease_settings = FAST_LEASES

    async def start(self, node_id: int, *extra: str) -> Node:
        log = self.root / f"node-{node_id}.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                *REBALANCE, "serve", "--cluster", self.url, "--node-id", str(node_id),
                "--bind", "127.0.0.1:0", "--data-dir", str(self.root / f"data-{node_id}"),
                "--topic", f"{TOPIC}:4", *self.lease_settings, *extra, stderr=out,
            )  # fmt: skip
        STARTED.append(process.pid)
        deadline = time.monotonic() + 30
        while not (found := re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text())):
            assert process.returncode is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.05)
        self.nodes[node_id] = Node(node_id, process, int(found.group(1)), log)
        return self.nodes[node_id]

    def leases(self) -> dict[int, tuple[int | None, int, bool]]:
        """partition -> (owner, epoch, live) as PostgreSQL has them now."""
        with psycopg.connect(self.url) as db:
            rows = db.execute(
                "SELECT partition, owner, epoch, lease_expires > clock_timestamp() FROM leases"
            ).fetchall()
        return {p: (owner, epoch, live) for p, owner, epoch, live in rows}

    def owner(self, group: str) -> tuple[int | None, int]:
        owner, epoch, live = self.leases()[partition_for(group)]
        return (owner if live else None), epoch

    def bootstrap(self) -> list[str]:
        return [f"127.0.0.1:{n.port}" for n in self.nodes.values() if n.process.returncode is None]

    async def stop_all(self) -> None:
        for node in self.nodes.values():
            if node.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    node.process.send_signal(signal.SIGCONT)
                    node.process.kill()
                await node.process.wait()


async def until(condition: Callable[[], bool], timeout: float = 20.0) -> float:
    """Seconds until `condition` held (it fails the test after `timeout`)."""
    began = time.monotonic()
    while not await asyncio.to_thread(condition):
        assert time.monotonic() - began < timeout, "not reached in time"
        await asyncio.sleep(0.05)
    return time.monotonic() - began


@pytest.fixture
async def cluster(postgresql_database: str, tmp_path: Path) -> AsyncIterator[Cluster]:
    made = Cluster(postgresql_database, tmp_path)
    yield made
    await made.stop_all()


async def three_nodes(cluster: Cluster) -> None:
    await asyncio.gather(*(cluster.start(node_id) for node_id in (1, 2, 3)))

    def shared() -> bool:
        live = [owner for owner, _, alive in cluster.leases().values() if alive]
        return len(live) == 50 and all(live.count(n) in (16, 17) for n in (1, 2, 3))

    await until(shared)


async def find_coordinator(port: int, groups: list[str]) -> dict[str, tuple[int, int, int]]:
    client = await WireClient.connect("127.0.0.1", port)
    try:
        found = await client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": groups}
        )
    finally:
        await client.close()
    return {c.key: (c.error_code, c.node_id, c.port) for c in found.coordinators}


RETRIED = (
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
)
"""What a client retries at the coordinator it finds next (a partition can move again: a node
that comes back gets its share handed over)."""


async def fetch_offsets(cluster: Cluster, group: str) -> dict[int, int]:
    """The group's committed offsets at its coordinator, once it has loaded them."""
    for _ in range(200):
        owner = cluster.owner(group)[0]
        if owner is None:
            await asyncio.sleep(0.05)
            continue
        client = await WireClient.connect("127.0.0.1", cluster.nodes[owner].port)
        try:
            fetched = await client.request(
                ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}]}
            )
        finally:
            await client.close()
        (found,) = fetched.groups
        if found.error_code not in RETRIED:
            break
        await asyncio.sleep(0.05)
    assert found.error_code == ErrorCode.none, found
    return {p.partition_index: p.committed_offset for t in found.topics for p in t.partitions}


async def status_of(cluster: Cluster) -> str:
    status = await asyncio.to_thread(
        run_rebalance, "cluster", "status", "--cluster", cluster.url, "--last", "200"
    )
    assert status.returncode == 0, status.stderr
    return status.stdout


async def test_three_nodes_share_the_partitions_and_every_node_names_the_owner(
    cluster: Cluster,
) -> None:
    await three_nodes(cluster)
    groups = [f"group-{i}" for i in range(40)]
    ports = {n.node_id: n.port for n in cluster.nodes.values()}
    expected = {g: cluster.owner(g)[0] for g in groups}
    for node in cluster.nodes.values():
        answers = await find_coordinator(node.port, groups)
        assert {g: (ErrorCode.none, expected[g], ports[expected[g]]) for g in groups} == answers  # type: ignore[index]
    status = run_rebalance("cluster", "status", "--cluster", cluster.url)
    assert status.returncode == 0, status.stderr
    for node_id, port in ports.items():
        assert re.search(
            rf"node {node_id}  127\.0\.0\.1:{port}  alive .* 1[67] partitions", status.stdout
        )


async def committing(
    bootstrap: list[str], group: str, started: asyncio.Event, acked: list[int]
) -> None:
    """An aiokafka consumer of `group` committing offsets 1, 2, 3... of its partitions, each
    acknowledged one appended to `acked`, until cancelled."""
    consumer = AIOKafkaConsumer(
        TOPIC, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=30_000, heartbeat_interval_ms=1000, request_timeout_ms=5000,
        metadata_max_age_ms=1000,
    )  # fmt: skip
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=200)
        partitions = sorted(consumer.assignment(), key=lambda tp: tp.partition)
        started.set()
        offset = 0
        while True:
            offset += 1
            try:
                # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows a cancel that
                # arrives as the commit completes, and this loop would then commit forever.
                async with asyncio.timeout(10):
                    await consumer.commit({tp: offset for tp in partitions})
            except (KafkaError, TimeoutError):
                await asyncio.sleep(0.05)
                continue
            acked.append(offset)
    finally:
        with contextlib.suppress(TimeoutError):  # a LeaveGroup to a node just killed
            async with asyncio.timeout(10):
                await consumer.stop()


async def owner_fails_over(
    cluster: Cluster, group: str, fault: Callable[[Node], Awaitable[None]]
) -> tuple[Node, int, float]:
    """A consumer commits, `fault` hits its coordinator; returns the successor, the last offset
    acknowledged, and seconds from the fault to the successor's first acknowledged commit."""
    await three_nodes(cluster)
    acked: list[int] = []
    started = asyncio.Event()
    consumer = asyncio.create_task(committing(cluster.bootstrap(), group, started, acked))
    try:
        await asyncio.wait_for(started.wait(), 30)
        await until(lambda: len(acked) >= 20)
        owner_id, epoch = cluster.owner(group)
        assert owner_id is not None
        faulted = time.monotonic()
        await fault(cluster.nodes[owner_id])
        before = len(acked)

        def moved() -> bool:
            successor, new_epoch = cluster.owner(group)
            return successor not in (None, owner_id) and new_epoch > epoch

        await until(moved)
        await until(lambda: len(acked) > before + 5)  # commits acknowledged at the successor
        failover_s = time.monotonic() - faulted
    finally:
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
    successor_id = cluster.owner(group)[0]
    assert successor_id is not None and successor_id != owner_id
    return cluster.nodes[successor_id], acked[-1], failover_s


async def test_sigkill_of_the_owner_loses_no_acknowledged_commit(cluster: Cluster) -> None:
    async def kill(node: Node) -> None:
        node.process.kill()
        await node.process.wait()

    successor, last_acked, _ = await owner_fails_over(cluster, "killed-app", kill)
    offsets = await fetch_offsets(cluster, "killed-app")
    assert offsets and all(o >= last_acked for o in offsets.values()), (last_acked, offsets)
    assert re.search(
        rf"  {partition_for('killed-app')}@\d+  node \d -> node {successor.node_id} "
        r"\(its lease lapsed\)",
        await status_of(cluster),
    )


async def test_sigterm_hands_the_partitions_over_before_the_lease_ends(cluster: Cluster) -> None:
    # A lease far longer than the takeover may take: a takeover that waited for it fails.
    cluster.lease_settings = (
        "--set",
        "cluster.lease.ms=30000",
        "--set",
        "cluster.lease.renew.ms=500",
    )
    logs: list[str] = []

    async def terminate(node: Node) -> None:
        node.process.terminate()
        exited = await asyncio.wait_for(node.process.wait(), 60)
        assert exited == 0, node.log.read_text()
        logs.append(node.log.read_text())

    successor, last_acked, failover_s = await owner_fails_over(cluster, "leaving-app", terminate)
    assert failover_s < 20, failover_s
    assert re.search(r"handed over 1[67] partitions", logs[0]), logs[0][-2000:]
    assert re.search(
        rf"  {partition_for('leaving-app')}@\d+  node \d -> node {successor.node_id} "
        r"\(handed over\)",
        await status_of(cluster),
    )
    offsets = await fetch_offsets(cluster, "leaving-app")
    assert offsets and all(o >= last_acked for o in offsets.values()), (last_acked, offsets)


def simple_commit(group: str, offset: int) -> dict[str, Any]:
    partition = {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
    return {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [partition]}],
    }  # fmt: skip


def join(group: str) -> dict[str, Any]:
    return {
        "group_id": group, "session_timeout": 10_000, "rebalance_timeout": 10_000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\0\0\0\0\0\1\0\6orders\0\0\0\0"}],
    }  # fmt: skip


async def test_a_node_frozen_past_its_lease_answers_not_coordinator_once_resumed(
    cluster: Cluster,
) -> None:
    await three_nodes(cluster)
    group = "frozen-app"
    owner_id, epoch = cluster.owner(group)
    assert owner_id is not None
    frozen = cluster.nodes[owner_id]
    client = await WireClient.connect("127.0.0.1", frozen.port)
    try:
        first = await client.request(ApiKey.OFFSET_COMMIT, 8, simple_commit(group, 7))
        assert first.topics[0].partitions[0].error_code == ErrorCode.none
        os.kill(frozen.process.pid, signal.SIGSTOP)
        try:
            await until(lambda: cluster.owner(group)[0] not in (None, owner_id))
            # Requests the frozen node reads before anything else once resumed.
            await client.send(client.encode(ApiKey.OFFSET_COMMIT, 8, simple_commit(group, 8)))
            await client.send(client.encode(ApiKey.JOIN_GROUP, 5, join(group)))
        finally:
            os.kill(frozen.process.pid, signal.SIGCONT)
        _, committed = await client.read_response(ApiKey.OFFSET_COMMIT, 8)
        _, joined = await client.read_response(ApiKey.JOIN_GROUP, 5)
    finally:
        await client.close()
    assert committed.topics[0].partitions[0].error_code == ErrorCode.not_coordinator
    assert joined.error_code == ErrorCode.not_coordinator
    successor_id, new_epoch = cluster.owner(group)
    assert new_epoch > epoch
    assert successor_id is not None
    assert await fetch_offsets(cluster, group) == {0: 7}


def refused(*args: str) -> tuple[int, str]:
    done = run_rebalance("serve", "--bind", "127.0.0.1:0", *args)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # one line, no traceback
    return done.returncode, lines[0]


def test_a_cluster_url_that_is_not_postgresql_is_refused_in_one_line(tmp_path: Path) -> None:
    status, line = refused("--cluster", "mysql://me@db/x", "--data-dir", str(tmp_path))
    assert status == 2
    assert line == (
        "rebalance serve: --cluster wants postgresql://USER@HOST:PORT/DB, not 'mysql://me@db/x'"
    )
    assert not tmp_path.joinpath("groups.sqlite").exists()


def test_an_unreachable_postgresql_is_refused_in_one_line(tmp_path: Path) -> None:
    url = "postgresql://postgres:secret@127.0.0.1:1/rebalance"
    status, line = refused("--cluster", url, "--data-dir", str(tmp_path / "d"))
    assert status == 1
    assert line.startswith(
        "rebalance serve: cannot reach PostgreSQL at postgresql://postgres:***@127.0.0.1:1/"
    ), line
    assert "secret" not in line


async def test_a_node_id_live_on_another_node_is_refused_in_one_line(
    cluster: Cluster, tmp_path: Path
) -> None:
    await cluster.start(1)
    status, line = await asyncio.to_thread(
        refused, "--cluster", cluster.url, "--node-id", "1", "--data-dir", str(tmp_path / "again")
    )
    assert status == 1
    assert re.fullmatch(
        r"rebalance serve: node id 1 is live on another node \(127\.0\.0\.1:\d+, .*", line
    ), line


def test_plain_serve_imports_nothing_of_cluster_mode() -> None:
    code = (
        "import sys\n"
        "from coordinator.cli.main import build_parser\n"
        "from coordinator.cli.cluster import serve_parts\n"
        "from coordinator.groups.extension import GroupCoordinatorExtension\n"
        "args = build_parser().parse_args(['serve', '--data-dir', 'd'])\n"
        "parts = serve_parts(args, GroupCoordinatorExtension())\n"
        "assert [type(e).__name__ for e in parts.extensions] == ['GroupCoordinatorExtension']\n"
        "print(sorted(m for m in sys.modules if 'psycopg' in m or 'coordinator.cluster' in m))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
