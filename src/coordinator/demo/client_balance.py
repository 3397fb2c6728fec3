"""`rebalance demo --protocol client-balance`: TubeMQ's client-side assignment, told step by step.

Three node processes (`node_process`: the modulo allocation loop and a consumer) form a group
with sourceCount 3 and start consuming at once, with no allocation round; node 1 leaves cleanly
and, since the split is by node id, its partitions wait for a node 1 to come back; node 2 is
SIGKILLed, holds its partitions until its session runs out, and a replacement node 2 resumes
them from the committed offsets. Then, in a second group with the checks off (sourceCount -1,
custom placement), a partition pinned by one node is PARTITION_OCCUPIED for another. Every
record is consumed; the event log and the report are in the output dir like the other demos'.
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

from coordinator.clients.client_balance.allocation import modulo_assigned
from coordinator.clients.client_balance.config import ClientBalanceConfig
from coordinator.clients.client_balance.consumer import ClientBalanceConsumer
from coordinator.clients.client_balance.errors import ClientBalanceError
from coordinator.demo.common import STORY_CONFIG, Say, supervised
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import RunningServer, WireClient, record_batch, running_server
from coordinator.wire import client_balance_schema as schema
from coordinator.wire.api_keys import ApiKey
from rebalance.config import CoordinatorConfig

GROUP = "demo-audit"
PINNED_GROUP = "demo-pinned"
TOPIC = "orders"
PARTITIONS = 6
RECORDS = 600
SESSION_MS = 3000


@dataclass
class Node:
    node_id: int
    process: asyncio.subprocess.Process
    lines: list[dict[str, Any]] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None
    #: When each line arrived (time.monotonic), beside `lines`.
    arrived: list[float] = field(default_factory=list)

    async def follow(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            self.lines.append(json.loads(raw))
            self.arrived.append(time.monotonic())

    def when(self, event: str) -> float:
        """When the first line of `event` arrived."""
        return next(
            t for t, ln in zip(self.arrived, self.lines, strict=True) if ln["event"] == event
        )

    def held(self) -> list[str]:
        found = [line["keys"] for line in self.lines if line["event"] == "held"]
        return sorted(found[-1]) if found else []

    def consumed(self) -> list[tuple[str, int]]:
        return [(ln["key"], ln["offset"]) for ln in self.lines if ln["event"] == "consumed"]

    def member(self) -> str:
        return next((str(ln["member"]) for ln in self.lines if ln["event"] == "started"), "?")


async def start_node(server: RunningServer, node_id: int) -> Node:
    log = (server.data_dir / f"node-{node_id}.log").open("ab")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "coordinator.testing.client_balance_node", server.bootstrap,
        GROUP, TOPIC, "3", str(node_id), "--session-ms", str(SESSION_MS),
        stdout=asyncio.subprocess.PIPE, stderr=log,
    )  # fmt: skip
    log.close()
    node = Node(node_id, process)
    node.reader = asyncio.create_task(node.follow())
    return node


async def until(condition: Any, what: str, timeout: float = 60) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"the demo got stuck: {what}")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def produce(server: RunningServer, start: int, count: int) -> None:
    client = await WireClient.connect(server.host, server.port)
    try:
        for p in range(PARTITIONS):
            values = [f"order-{i}".encode() for i in range(start + p, start + count, PARTITIONS)]
            await client.request(ApiKey.PRODUCE, 9, {
                "acks": -1, "timeout": 5000,
                "topic_data": [{"name": TOPIC, "partition_data": [
                    {"index": p, "records": record_batch(values)}]}],
            })  # fmt: skip
    finally:
        await client.close()


async def describe(server: RunningServer, group: str) -> dict[int, tuple[str, list[str]]]:
    """nodeId -> (member id, held partition keys), from ClientBalanceDescribe."""
    client = await WireClient.connect(server.host, server.port)
    try:
        answer = await client.request(ApiKey.CLIENT_BALANCE_DESCRIBE, 0, {"group_ids": [group]})
    finally:
        await client.close()
    broker = server.broker.node_id
    return {
        int(n.node_id): (
            n.member_id,
            sorted(f"{broker}:{h.topic}:{p}" for h in n.held for p in h.partitions),
        )
        for n in answer.groups[0].nodes
    }


def show(say: Say, nodes: list[Node]) -> None:
    for n in sorted(nodes, key=lambda n: n.node_id):
        say(f"    node {n.node_id}  {', '.join(n.held()) or '(nothing)'}")


async def run_client_balance_story(data_dir: Path, say: Say) -> None:
    schema.register_with_codec()
    config = CoordinatorConfig.from_properties(STORY_CONFIG)
    groups = GroupCoordinatorExtension(config)
    nodes: list[Node] = []
    everyone: list[Node] = []
    async with (
        running_server(topics=[(TOPIC, PARTITIONS)], groups=groups, data_dir=data_dir) as server,
        supervised(everyone),
    ):
        say(f"server on {server.bootstrap}, data in {data_dir}")
        await produce(server, 0, RECORDS // 2)
        say(f"produced {RECORDS // 2} records to {TOPIC!r} ({PARTITIONS} partitions)")
        broker = server.broker.node_id
        meta = {f"{broker}:{TOPIC}:{p}": True for p in range(PARTITIONS)}
        share = {i: sorted(modulo_assigned(meta, 3, i)) for i in range(3)}

        say("\nnodes 0, 1, 2 start (sourceCount 3; each takes hashCode(key) % 3 == nodeId):")
        launched = []
        for i in range(3):
            launched.append(time.monotonic())
            nodes.append(await start_node(server, i))
        everyone.extend(nodes)
        await until(lambda: all(n.held() == share[n.node_id] for n in nodes), "the modulo split")
        await until(lambda: all(n.consumed() for n in nodes), "the first records")
        firsts = [1000 * (n.when("consumed") - n.when("started")) for n in nodes]
        say(
            "no allocation round: each node's first record came "
            + ", ".join(f"{ms:.0f}" for ms in firsts)
            + " ms after its join (the processes took "
            + ", ".join(
                f"{n.when('started') - start:.1f}" for n, start in zip(nodes, launched, strict=True)
            )
            + " s to start)"
        )
        show(say, nodes)

        leaver = nodes[1]
        leaver.process.send_signal(signal.SIGTERM)  # shutdown(): releases, leaves
        await leaver.process.wait()
        nodes.remove(leaver)
        say("\nnode 1 shuts down cleanly (releases its partitions, leaves):")
        await until(lambda: 1 not in _nodes(groups), "node 1 leaving")
        held = await describe(server, GROUP)
        free = sorted(set(meta) - {k for _, keys in held.values() for k in keys})
        say(f"    free now: {', '.join(free)} (the modulo split gives them to node 1 only)")
        nodes.append(await start_node(server, 1))
        everyone.append(nodes[-1])
        took = await until(lambda: nodes[-1].held() == share[1], "node 1 again")
        say(f"a new node 1 takes them after {took:.1f} s")
        show(say, nodes)

        victim = next(n for n in nodes if n.node_id == 2)
        await produce(server, RECORDS // 2, RECORDS // 2)
        say(f"\n{RECORDS // 2} more records; node 2 is SIGKILLed (no release, no leave)")
        victim.process.kill()
        await victim.process.wait()
        nodes.remove(victim)
        killed = time.monotonic()
        freed = await until(
            lambda: victim.member() not in {m for m, _ in _nodes(groups).values()},
            "node 2's session",
        )
        say(
            f"    its partitions stay held until its {SESSION_MS} ms session runs out: freed "
            f"{freed:.1f} s after the kill (its last heartbeat was before it)"
        )
        nodes.append(await start_node(server, 2))
        everyone.append(nodes[-1])
        took = await until(lambda: nodes[-1].held() == share[2], "the replacement node 2")
        say(
            f"a replacement node 2 takes them {time.monotonic() - killed:.1f} s after the "
            f"kill ({took:.1f} s after it started), resuming from the committed offsets"
        )
        show(say, nodes)

        await until(
            lambda: len({c for n in everyone for c in n.consumed()}) >= RECORDS,
            "every record consumed",
        )
        seen = [c for n in everyone for c in n.consumed()]
        twice = len(seen) - len(set(seen))
        say(
            f"\nrecords consumed: {len(set(seen))} of {RECORDS} distinct, {twice} delivered "
            "twice (delivered, not yet committed when node 2 died)"
        )

        await pinned(server, say)
        for n in nodes:
            n.process.send_signal(signal.SIGTERM)
        for n in nodes:
            await n.process.wait()
        say("nodes stopped; the server stops and flushes its event log")


def _nodes(groups: GroupCoordinatorExtension) -> dict[int, tuple[str, list[str]]]:
    """nodeId -> (member id, held partitions), as the core holds them (the story runs in the
    server's event loop, so it may read the core between two requests)."""
    assert groups.runtime is not None
    group: Any = groups.runtime.core.group(GROUP)
    if group is None:
        return {}
    return {n.node_id: (n.member_id, sorted(map(str, n.held))) for n in group.nodes.values()}


async def pinned(server: RunningServer, say: Say) -> None:
    """Custom placement: sourceCount -1 turns the modulo checks off; a partition one node has
    pinned is PARTITION_OCCUPIED for another until it is released."""
    say(f"\ngroup {PINNED_GROUP!r}, sourceCount -1 (custom placement): two nodes pin partitions")
    a, b = (
        ClientBalanceConsumer(
            ClientBalanceConfig(
                server.bootstrap, PINNED_GROUP, client_id=name, occupied_retry_backoff_ms=200
            )
        )
        for name in ("pin-a", "pin-b")
    )
    await a.start([TOPIC], -1, 0)
    await b.start([TOPIC], -1, 0)
    try:
        key = f"{server.broker.node_id}:{TOPIC}:0"
        await a.connect(key, bootstrap_offset=0)
        say(f"    pin-a registers {key} from offset 0")
        try:
            await b.connect(key)
            say(f"    pin-b registers {key} too: exclusivity is broken")
        except ClientBalanceError as exc:
            name = getattr(exc.code, "name", str(exc.code))
            say(f"    pin-b asks for {key}: {name} ({int(exc.code)}), held by pin-a")
        await a.disconnect(key)
        await asyncio.sleep(b.config.occupied_retry_backoff_ms / 1000)
        start = await b.connect(key)
        say(f"    pin-a releases it; pin-b registers it from the committed offset {start}")
    finally:
        await a.shutdown()
        await b.shutdown()
