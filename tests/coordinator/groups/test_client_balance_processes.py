"""Acceptance for client-balance groups: node processes against `rebalance serve`.

Three nodes (sourceCount 3) split a six-partition topic by TubeMQ's modulo and consume it, one
of them from a bootstrap offset; a node is SIGKILLed, its partitions are freed once its session
runs out, and a replacement with the same nodeId takes them and resumes from the committed
offsets; every record is consumed, none lost."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from serve_process import start_serve, stop

from coordinator.clients.client_balance import modulo_assigned
from coordinator.testing.server import WireClient, record_batch
from coordinator.wire import client_balance_schema as schema

TOPIC, PARTITIONS, SESSION_MS = "t", 6, 1500
NODE = [sys.executable, "-m", "coordinator.testing.client_balance_node"]


@dataclass
class NodeProcess:
    process: asyncio.subprocess.Process
    lines: list[dict[str, Any]] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    def held(self) -> set[str]:
        found = [line["keys"] for line in self.lines if line["event"] == "held"]
        return set(found[-1]) if found else set()

    def consumed(self) -> list[tuple[str, int]]:
        return [(ln["key"], ln["offset"]) for ln in self.lines if ln["event"] == "consumed"]

    def member(self) -> str:
        return str(next(ln["member"] for ln in self.lines if ln["event"] == "started"))


async def start_node(bootstrap: str, node_id: int, *extra: str) -> NodeProcess:
    process = await asyncio.create_subprocess_exec(
        *NODE, bootstrap, "g", TOPIC, "3", str(node_id), "--session-ms", str(SESSION_MS), *extra,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    node = NodeProcess(process)

    async def read() -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            node.lines.append(json.loads(line))

    node.reader = asyncio.create_task(read())
    return node


async def until(condition: Any, timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


async def produce(client: WireClient, partition: int, values: list[bytes]) -> None:
    response = await client.request(
        0,
        9,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {"name": TOPIC, "partition_data": [
                    {"index": partition, "records": record_batch(values)}]}
            ],
        },
    )  # fmt: skip
    assert int(response.responses[0].partition_responses[0].error_code) == 0


async def committed(client: WireClient) -> dict[int, int]:
    response = await client.request(9, 8, {"groups": [{"group_id": "g", "topics": None}]})
    return {
        int(p.partition_index): int(p.committed_offset)
        for t in response.groups[0].topics
        for p in t.partitions
    }


async def describe(client: WireClient) -> dict[str, list[int]]:
    response = await client.request(schema.DESCRIBE_KEY, 0, {"group_ids": ["g"]})
    return {
        n.member_id: sorted(int(p) for h in n.held for p in h.partitions)
        for n in response.groups[0].nodes
    }


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[str, WireClient]]:
    schema.register_with_codec()  # this process reads ClientBalanceDescribe answers
    process, port = await start_serve(
        tmp_path / "data", "--topic", f"{TOPIC}:{PARTITIONS}",
        "--set", "group.min.session.timeout.ms=500",
    )  # fmt: skip
    client = await WireClient.connect("127.0.0.1", port)
    yield f"127.0.0.1:{port}", client
    await client.close()
    await stop(process)


async def test_modulo_split_kill_takeover_nothing_lost(server: tuple[str, WireClient]) -> None:
    bootstrap, client = server
    for p in range(PARTITIONS):
        await produce(client, p, [f"{p}-{i}".encode() for i in range(10)])
    meta = {f"1:{TOPIC}:{p}": True for p in range(PARTITIONS)}  # broker id 1, the default
    expected = [modulo_assigned(meta, 3, i) for i in range(3)]
    pinned = sorted(expected[2])[0]
    nodes = [await start_node(bootstrap, 0), await start_node(bootstrap, 1)]
    nodes.append(await start_node(bootstrap, 2, "--bootstrap-offset", f"{pinned}=7"))
    try:
        await until(lambda: [n.held() for n in nodes] == expected)
        wave1 = {(key, o) for key in meta for o in range(10)} - {(pinned, o) for o in range(7)}
        await until(lambda: {c for n in nodes for c in n.consumed()} >= wave1)
        # The bootstrap offset is honoured: node 2 never saw offsets 0-6 of its pinned one.
        assert min(o for k, o in nodes[2].consumed() if k == pinned) == 7

        victim = nodes[1]
        victim_partitions = sorted(int(k.rsplit(":", 1)[1]) for k in expected[1])
        for p in range(PARTITIONS):
            await produce(client, p, [f"{p}-{i}".encode() for i in range(10, 15)])
        victim.process.send_signal(signal.SIGKILL)
        await victim.process.wait()
        killed_at = asyncio.get_running_loop().time()
        # Its partitions are held until its session runs out, then freed.
        assert victim.member() in await describe(client)
        async with asyncio.timeout(SESSION_MS / 1000 + 5):
            while victim.member() in await describe(client):
                await asyncio.sleep(0.05)
        freed_after = asyncio.get_running_loop().time() - killed_at
        assert freed_after >= SESSION_MS / 1000 - 0.6  # its last heartbeat was before the kill
        at_takeover = await committed(client)

        replacement = await start_node(bootstrap, 1)
        nodes[1] = replacement
        await until(lambda: replacement.held() == expected[1])
        for p in range(PARTITIONS):
            await produce(client, p, [f"{p}-{i}".encode() for i in range(15, 20)])
        everything = {(key, o) for key in meta for o in range(20)} - {(pinned, o) for o in range(7)}
        await until(lambda: {c for n in [*nodes, victim] for c in n.consumed()} >= everything)
        consumed = {c for n in [*nodes, victim] for c in n.consumed()}
        # The replacement resumed from the committed offsets (not from 0, not past them).
        for p in victim_partitions:
            key = f"1:{TOPIC}:{p}"
            first = min(o for k, o in replacement.consumed() if k == key)
            assert first == at_takeover[p], (key, first, at_takeover)
        assert consumed <= everything
        described = await describe(client)
        assert sorted(described) == sorted(n.member() for n in nodes)
    finally:
        for n in nodes:
            if n.process.returncode is None:
                n.process.send_signal(signal.SIGTERM)
        for n in nodes:
            await asyncio.wait_for(n.process.wait(), 30)
            if n.reader is not None:
                await n.reader
    # A clean stop releases and leaves.
    assert await describe(client) == {}
    assert all(n.lines[-1]["event"] == "stopped" for n in nodes)
