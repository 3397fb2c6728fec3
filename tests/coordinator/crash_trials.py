"""kill -9 trials: `rebalance serve` (a real process) works for clients that note what it
acknowledged, is SIGKILLed at a random moment with requests in flight, and is started again on
the same data dir; then everything acknowledged must be there, and nothing that was never sent.

Three kinds, each a `Kind` (the server's arguments, the clients, the check after the restart):
- `kip848`: KIP-848 consumer groups: members heartbeating (member ids, epochs, assignments)
  and committing offsets with their member epochs;
- `client_balance`: client-balance groups: nodes joining, registering partitions one at a
  time, committing with their epochs;
- `topic_admin`: topics created, grown, written to, their records deleted, and deleted.
Used by tests/coordinator/node/test_crash_trials.py (a few trials) and by
benchmarks/bench_crash_trials.py (a hundred per kind).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serve_process import start_serve, stop

from coordinator.testing.server import WireClient, record_batch
from coordinator.wire import client_balance_schema as cb

PRODUCE, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 2, 3, 8, 9
CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, CREATE_PARTITIONS = 19, 20, 21, 37
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
PARTITIONS = 6
GONE = (ConnectionError, asyncio.IncompleteReadError, struct.error, OSError)
"""What a client sees when the server is killed under it."""


@dataclass
class Acked:
    """What the server acknowledged (and what was sent) before it was killed."""

    acks: int = 0
    members: dict[tuple[str, str], int] = field(default_factory=dict)
    """(group, member id) -> the highest member epoch a heartbeat answered."""
    held: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    """(group, member id) -> partitions whose registration was answered (client-balance), or
    its assignment at that epoch (KIP-848)."""
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    sent: dict[tuple[str, int], int] = field(default_factory=dict)
    """(group, partition) -> the highest offset answered / sent."""
    topics: dict[str, int] = field(default_factory=dict)
    """topic -> partitions, once created (and grown) with an answer."""
    deleted: set[str] = field(default_factory=set)
    records: dict[str, int] = field(default_factory=dict)
    """topic -> log end offset of partition 0 once its Produce was answered."""
    log_start: dict[str, int] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)
    """Topics with an admin request sent and not answered: either outcome is right."""
    requested: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Kind:
    name: str
    serve_args: tuple[str, ...]
    clients: Callable[[int, Acked], list[Awaitable[None]]]
    check: Callable[[WireClient, Acked], Awaitable[int]]
    """Raises AssertionError on a loss; returns how many acknowledged things it checked."""
    acks_before_kill: int


async def trial(kind: Kind, data_dir: Path, rng: random.Random) -> int:
    """One trial on a fresh `data_dir`; the number of acknowledged things checked."""
    process, port = await start_serve(data_dir, *kind.serve_args)
    acked = Acked()
    clients = [asyncio.ensure_future(c) for c in kind.clients(port, acked)]
    for _ in range(400):  # at most 20 s for the clients to get going
        if acked.acks >= kind.acks_before_kill or any(c.done() for c in clients):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(rng.uniform(0, 0.3))
    process.send_signal(signal.SIGKILL)
    await process.wait()
    await asyncio.gather(*clients)  # a client's own failure is raised here
    assert acked.acks >= kind.acks_before_kill, f"only {acked.acks} acknowledgements"
    restarted, port = await start_serve(data_dir)
    try:
        client = await WireClient.connect("127.0.0.1", port)
        checked = await kind.check(client, acked)
        await client.close()
    finally:
        await stop(restarted)
    return checked


async def until_killed(port: int, work: Callable[[WireClient], Awaitable[None]]) -> None:
    client = await WireClient.connect("127.0.0.1", port)
    try:
        await work(client)
    except GONE:
        pass
    finally:
        with contextlib.suppress(Exception):
            await client.close()


async def commit(
    client: WireClient, acked: Acked, group: str, member: str, epoch: int, partition: int
) -> None:
    key = (group, partition)
    offset = acked.sent[key] = acked.sent.get(key, 0) + 1
    response = await client.request(OFFSET_COMMIT, 9, {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
        "group_instance_id": None, "topics": [{"name": "orders", "partitions": [
            {"partition_index": partition, "committed_offset": offset,
             "committed_leader_epoch": -1, "committed_metadata": ""}]}],
    })  # fmt: skip
    if response.topics[0].partitions[0].error_code == 0:
        acked.committed[key] = offset
        acked.acks += 1


async def check_commits(client: WireClient, acked: Acked) -> int:
    groups = sorted({group for group, _ in acked.sent})
    fetched = await client.request(OFFSET_FETCH, 8, {
        "groups": [{"group_id": g, "topics": None} for g in groups], "require_stable": False,
    })  # fmt: skip
    found = {
        (g.group_id, p.partition_index): p.committed_offset
        for g in fetched.groups
        for t in g.topics
        for p in t.partitions
    }
    for key, offset in acked.committed.items():
        assert offset <= found.get(key, -1) <= acked.sent[key], (key, offset, found.get(key))
    assert all(offset <= acked.sent.get(key, 0) for key, offset in found.items()), found
    return len(acked.committed)


# ------------------------------------------------------------------------------ KIP-848
def kip848_clients(port: int, acked: Acked) -> list[Awaitable[None]]:
    return [
        until_killed(port, lambda c, g=f"kip848-{g}", i=i: kip848_member(c, acked, g, i))
        for g in range(3)
        for i in range(3)
    ]


async def kip848_member(client: WireClient, acked: Acked, group: str, index: int) -> None:
    member_id, epoch, owned = "", 0, []
    while True:
        beat = await client.request(CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": group, "member_id": member_id, "member_epoch": epoch,
            "instance_id": None, "rack_id": None, "rebalance_timeout": 30_000,
            "subscribed_topic_names": ["orders"], "server_assignor": None,
            "topic_partitions": owned,
        })  # fmt: skip
        if beat.error_code:
            raise AssertionError(f"{group}: heartbeat answered {beat.error_code}")
        member_id, epoch = beat.member_id, beat.member_epoch
        acked.members[group, member_id] = epoch
        acked.acks += 1
        if beat.assignment is not None:
            owned = [
                {"topic_id": t.topic_id, "partitions": list(t.partitions)}
                for t in beat.assignment.topic_partitions
            ]
        acked.held[group, member_id] = {p for t in owned for p in t["partitions"]}
        # Each member commits partitions of its own, so no two commits of one race.
        for partition in range(index, PARTITIONS, 3):
            await commit(client, acked, group, member_id, epoch, partition)
        await asyncio.sleep(0.02)


async def kip848_check(client: WireClient, acked: Acked) -> int:
    groups = sorted({group for group, _ in acked.members})
    described = await client.request(CONSUMER_GROUP_DESCRIBE, 0, {
        "group_ids": groups, "include_authorized_operations": False})  # fmt: skip
    members = {(g.group_id, m.member_id): m for g in described.groups for m in g.members}
    for key, epoch in acked.members.items():
        assert key in members, f"member {key} acknowledged at epoch {epoch} is gone"
        found = members[key]
        assert found.member_epoch >= epoch, f"{key} at epoch {found.member_epoch}, acked {epoch}"
        if found.member_epoch == epoch:  # the assignment it was given at that epoch
            assigned = {p for t in found.assignment.topic_partitions for p in t.partitions}
            assert assigned == acked.held[key], (key, epoch, assigned, acked.held[key])
    return len(acked.members) + await check_commits(client, acked)


KIP848 = Kind("kip848", ("--topic", f"orders:{PARTITIONS}"), kip848_clients, kip848_check, 60)


# ------------------------------------------------------------------------------ client-balance
def client_balance_clients(port: int, acked: Acked) -> list[Awaitable[None]]:
    return [
        until_killed(port, lambda c, g=f"balance-{g}", n=n: balance_node(c, acked, g, n))
        for g in range(3)
        for n in range(2)
    ]


async def balance_node(client: WireClient, acked: Acked, group: str, node: int) -> None:
    cb.register_with_codec()
    member = f"{group}-node-{node}"
    joined = await client.request(cb.HEARTBEAT_KEY, 0, {
        "group_id": group, "member_id": member, "member_epoch": 0, "source_count": 2,
        "node_id": node, "topics": ["orders"], "session_timeout_ms": 30_000,
    })  # fmt: skip
    if joined.error_code:
        raise AssertionError(f"{member}: join answered {joined.error_code}")
    epoch = joined.member_epoch
    acked.members[group, member] = epoch
    acked.held[group, member] = set()
    mine = list(range(node, PARTITIONS, 2))
    while True:
        for partition in mine:
            if partition not in acked.held[group, member]:
                registered = await client.request(cb.REGISTER_KEY, 0, {
                    "group_id": group, "member_id": member, "member_epoch": epoch,
                    "topics": [{"name": "orders", "partitions": [
                        {"partition_index": partition, "bootstrap_offset": -1}]}],
                })  # fmt: skip
                if registered.topics[0].partitions[0].error_code == 0:
                    acked.held[group, member].add(partition)
                    acked.acks += 1
            await commit(client, acked, group, member, epoch, partition)
        await asyncio.sleep(0.02)


async def client_balance_check(client: WireClient, acked: Acked) -> int:
    groups = sorted({group for group, _ in acked.members})
    described = await client.request(cb.DESCRIBE_KEY, 0, {"group_ids": groups})
    held = {
        (g.group_id, n.member_id): {p for h in n.held for p in h.partitions}
        for g in described.groups
        for n in g.nodes
    }
    for key, partitions in acked.held.items():
        assert key in held, f"node {key} acknowledged with {sorted(partitions)} is gone"
        assert partitions <= held[key], f"node {key} holds {held[key]}, acknowledged {partitions}"
    return sum(len(p) + 1 for p in acked.held.values()) + await check_commits(client, acked)


CLIENT_BALANCE = Kind(
    "client_balance",
    ("--topic", f"orders:{PARTITIONS}"),
    client_balance_clients,
    client_balance_check,
    60,
)


# ------------------------------------------------------------------------------ topic admin
def topic_admin_clients(port: int, acked: Acked) -> list[Awaitable[None]]:
    return [until_killed(port, lambda c, w=w: topic_admin(c, acked, w)) for w in range(2)]


async def admin(acked: Acked, topic: str, request: Awaitable[Any]) -> Any:
    acked.in_flight.add(topic)
    acked.requested.add(topic)
    response = await request
    acked.in_flight.discard(topic)
    acked.acks += 1
    return response


async def topic_admin(client: WireClient, acked: Acked, worker: int) -> None:
    for step in range(10_000):
        topic = f"topic-{worker}-{step}"
        created = await admin(acked, topic, client.request(CREATE_TOPICS, 7, {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": -1,
                        "assignments": [], "configs": []}],
            "timeout": 5000, "validate_only": False,
        }))  # fmt: skip
        assert created.topics[0].error_code == 0, created
        acked.topics[topic] = 1
        produced = await admin(acked, topic, client.request(PRODUCE, 9, {
            "acks": -1, "timeout": 1000, "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": record_batch([b"a", b"b", b"c"])}]}],
        }))  # fmt: skip
        assert produced.responses[0].partition_responses[0].error_code == 0, produced
        acked.records[topic] = 3
        if step % 2 == 0:
            grown = await admin(acked, topic, client.request(CREATE_PARTITIONS, 3, {
                "topics": [{"name": topic, "count": 3, "assignments": None}],
                "timeout": 5000, "validate_only": False,
            }))  # fmt: skip
            assert grown.results[0].error_code == 0, grown
            acked.topics[topic] = 3
        if step % 3 == 0:
            trimmed = await admin(acked, topic, client.request(DELETE_RECORDS, 2, {
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 2}]}],
                "timeout": 5000,
            }))  # fmt: skip
            assert trimmed.topics[0].partitions[0].error_code == 0, trimmed
            acked.log_start[topic] = 2
        if step % 4 == 3:
            doomed = f"topic-{worker}-{step - 1}"
            removed = await admin(acked, doomed, client.request(DELETE_TOPICS, 6, {
                "topics": [{"name": doomed}], "timeout": 5000}))  # fmt: skip
            assert removed.responses[0].error_code == 0, removed
            acked.deleted.add(doomed)


async def topic_admin_check(client: WireClient, acked: Acked) -> int:
    metadata = await client.request(METADATA, 12, {
        "topics": None, "allow_auto_topic_creation": False})  # fmt: skip
    found = {t.name: len(t.partitions) for t in metadata.topics if not t.is_internal}
    assert set(found) <= acked.requested, f"never created: {set(found) - acked.requested}"
    checked = 0
    for topic, partitions in acked.topics.items():
        if topic in acked.in_flight:
            continue
        checked += 1
        if topic in acked.deleted:
            assert topic not in found, f"{topic} was deleted, yet it is back"
            continue
        assert found.get(topic) == partitions, (topic, partitions, found.get(topic))
        ends = await offsets(client, topic)
        assert ends == (acked.log_start.get(topic, 0), acked.records.get(topic, 0)), (topic, ends)
    return checked


async def offsets(client: WireClient, topic: str) -> tuple[int, int]:
    """Log start and log end offset of the topic's partition 0."""
    found = []
    for timestamp in (-2, -1):
        response = await client.request(LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "timestamp": timestamp, "current_leader_epoch": -1}]}],
        })  # fmt: skip
        found.append(int(response.topics[0].partitions[0].offset))
    return found[0], found[1]


TOPIC_ADMIN = Kind("topic_admin", (), topic_admin_clients, topic_admin_check, 40)
KINDS = {kind.name: kind for kind in (KIP848, CLIENT_BALANCE, TOPIC_ADMIN)}
