"""Durable commits: `kill -9` loses no acknowledged commit (`rebalance serve` is SIGKILLed while
many connections commit, several requests pipelined on each; after a restart every group's
offsets are at least the last ones acknowledged, and each connection's answers came back in
request order), and commits of many connections and groups that arrive while a write is under
way share the next transaction (one fsync), answered only once it is done."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import struct
from pathlib import Path

from serve_process import start_serve, stop

from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.groups.store.sqlite import SqliteStore
from coordinator.testing.server import WireClient, running_server

CONNECTIONS = 24
IN_FLIGHT = 4
PARTITIONS = 8


def commit(client: WireClient, group: str, offset: int) -> bytes:
    partitions = [
        {
            "partition_index": p,
            "committed_offset": offset,
            "committed_leader_epoch": -1,
            "committed_metadata": "",
        }
        for p in range(PARTITIONS)
    ]
    values = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": "orders", "partitions": partitions}],
    }
    return client.encode(8, 8, values)


async def committer(port: int, group: str, acked: dict[str, int]) -> None:
    """Commit offsets 1, 2, 3... of `group` with `IN_FLIGHT` requests outstanding, until the
    connection dies; `acked[group]` is the highest offset answered without error."""
    client = await WireClient.connect("127.0.0.1", port)
    sent: list[tuple[int, int]] = []  # (correlation id, offset), oldest first
    offset = 0
    try:
        while True:
            while len(sent) < IN_FLIGHT:
                offset += 1
                await client.send(commit(client, group, offset))
                sent.append((client._correlation_id, offset))
            correlation_id, response = await client.read_response(8, 8)
            expected_id, answered = sent.pop(0)
            assert correlation_id == expected_id, "answers out of request order"
            codes = [p.error_code for t in response.topics for p in t.partitions]
            assert codes == [0] * PARTITIONS, codes
            acked[group] = answered
    except (ConnectionError, asyncio.IncompleteReadError, struct.error):
        pass  # the server was killed
    finally:
        with contextlib.suppress(Exception):
            await client.close()


async def test_kill_9_loses_no_acknowledged_commit(tmp_path: Path) -> None:
    process, port = await start_serve(tmp_path, "--topic", f"orders:{PARTITIONS}")
    groups = [f"durable-{i}" for i in range(CONNECTIONS)]
    acked: dict[str, int] = {}
    committers = [asyncio.create_task(committer(port, g, acked)) for g in groups]
    for _ in range(600):  # every connection has had 20 commits answered (at most 30 s)
        if len(acked) == CONNECTIONS and min(acked.values()) >= 20:
            break
        if any(c.done() for c in committers):  # a committer failed: its error is raised below
            break
        await asyncio.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # commits in flight on every connection
    assert await process.wait() == -signal.SIGKILL
    await asyncio.gather(*committers)
    snapshot = dict(acked)

    restarted, port = await start_serve(tmp_path)
    client = await WireClient.connect("127.0.0.1", port)
    for group in groups:
        fetched = await client.request(9, 8, {"groups": [{"group_id": group, "topics": None}]})
        (found,) = fetched.groups
        offsets = {
            p.partition_index: p.committed_offset for t in found.topics for p in t.partitions
        }
        assert set(offsets) == set(range(PARTITIONS)), (group, offsets)
        # At least what was acknowledged; at most what was sent (one window beyond).
        assert all(snapshot[group] <= o <= snapshot[group] + IN_FLIGHT for o in offsets.values()), (
            group,
            snapshot[group],
            offsets,
        )
    await client.close()
    await stop(restarted)


async def test_commits_arriving_during_a_write_share_the_next_fsync() -> None:
    groups = GroupCoordinatorExtension()
    async with running_server(topics=[("orders", PARTITIONS)], groups=groups) as node:
        assert groups.runtime is not None
        store = groups.runtime.store
        assert isinstance(store, SqliteStore)
        clients = [await WireClient.connect(node.host, node.port) for _ in range(CONNECTIONS)]
        before = store.stats.transactions, store.stats.records
        with store._lock:  # the writer thread cannot write meanwhile
            for i, client in enumerate(clients):
                await client.send(commit(client, f"shared-{i}", 7))
                await asyncio.sleep(0.005)  # each its own loop iteration, its own append
            first = asyncio.ensure_future(clients[0].read_response(8, 8))
            core = groups.runtime.core
            for _ in range(1000):  # until the core has taken every commit (and queued its write)
                if all(core.group(f"shared-{i}") is not None for i in range(CONNECTIONS)):
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # (the last iteration's records reach the store's queue)
            assert not first.done(), "a commit was answered before its write"
        answers = [await first] + [await c.read_response(8, 8) for c in clients[1:]]
        for _correlation_id, response in answers:
            codes = [p.error_code for t in response.topics for p in t.partitions]
            assert codes == [0] * PARTITIONS
        # The first write may have taken some commits alone; everything queued behind it
        # went into one transaction.
        assert store.stats.transactions - before[0] <= 2
        assert store.stats.records - before[1] == CONNECTIONS * PARTITIONS
        for client in clients:
            await client.close()
