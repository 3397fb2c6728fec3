"""Topics agree across `rebalance serve --cluster` nodes: three node processes on a real
PostgreSQL. A topic created on node 1 is in the Metadata of nodes 2 and 3 with the same id,
partitions and configs (its logs there come up empty); two nodes creating a name at once: one
wins, the other answers TOPIC_ALREADY_EXISTS; a topic deleted from another node is gone
everywhere, and so are a group's committed offsets for it at a coordinator on a third node;
partitions added from one node are assigned by a KIP-848 coordinator on another."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero
from serve_process import REBALANCE, STARTED

from coordinator.testing.server import WireClient
from coordinator.wire.api_keys import ApiKey
from rebalance.placement import partition_for

FAST = ("--set", "cluster.lease.ms=2000", "--set", "cluster.lease.renew.ms=500")
TOPIC_RESOURCE = 2
TAKING_OVER = (ErrorCode.coordinator_load_in_progress, ErrorCode.not_coordinator)
"""What a group's node answers while it takes the partition over: the lease is its, and the
runtime loads it (or has not begun: NOT_COORDINATOR until the lease callback runs)."""


class Nodes:
    """Node processes of one test on one database, each with a client connected to it."""

    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root
        self.processes: dict[int, asyncio.subprocess.Process] = {}
        self.clients: dict[int, WireClient] = {}

    async def start(self, node_id: int) -> None:
        log = self.root / f"node-{node_id}.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                *REBALANCE, "serve", "--cluster", self.url, "--node-id", str(node_id),
                "--bind", "127.0.0.1:0", "--data-dir", str(self.root / f"data-{node_id}"),
                *FAST, stderr=out,
            )  # fmt: skip
        STARTED.append(process.pid)
        self.processes[node_id] = process
        deadline = time.monotonic() + 60
        while not (found := re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text())):
            assert process.returncode is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.05)
        self.clients[node_id] = await WireClient.connect("127.0.0.1", int(found.group(1)))

    async def balanced(self) -> bool:
        with psycopg.connect(self.url) as db:
            rows = db.execute(
                "SELECT owner FROM leases WHERE lease_expires > clock_timestamp()"
            ).fetchall()
        owners = [owner for (owner,) in rows]
        return len(owners) == 50 and all(owners.count(n) in (16, 17) for n in (1, 2, 3))

    def owner(self, group: str) -> int | None:
        with psycopg.connect(self.url) as db:
            row = db.execute(
                "SELECT owner FROM leases"
                " WHERE partition = %s AND lease_expires > clock_timestamp()",
                (partition_for(group),),
            ).fetchone()
        return None if row is None else row[0]

    async def stop(self) -> None:
        for client in self.clients.values():
            with contextlib.suppress(Exception):
                await client.close()
        for process in self.processes.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGKILL)
                await process.wait()


@pytest.fixture
async def nodes(postgresql_database: str, tmp_path: Path) -> AsyncIterator[Nodes]:
    made = Nodes(postgresql_database, tmp_path)
    try:
        await asyncio.gather(*(made.start(node_id) for node_id in (1, 2, 3)))
        await eventually(made.balanced)  # no partition moves during the test
        yield made
    finally:
        await made.stop()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    """`check` holds before `timeout` (a bound for "never", not a measurement)."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.05)


async def create(
    client: WireClient, name: str, partitions: int, configs: dict[str, str] | None = None
) -> Any:
    created = await client.request(ApiKey.CREATE_TOPICS, 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": -1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
        "timeout": 5000, "validate_only": False,
    })  # fmt: skip
    return created.topics[0]


async def metadata(client: WireClient, name: str) -> Any:
    """The topic `name` as the node's Metadata v12 answers it (never auto-created)."""
    answer = await client.request(ApiKey.METADATA, 12, {
        "topics": [{"topic_id": uuid_zero, "name": name}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})  # fmt: skip
    return answer.topics[0]


async def seen(client: WireClient, name: str, partitions: int | None = None) -> bool:
    topic = await metadata(client, name)
    return topic.error_code == ErrorCode.none and partitions in (None, len(topic.partitions))


async def test_a_topic_created_on_node_1_is_seen_by_nodes_2_and_3_with_its_id(
    nodes: Nodes,
) -> None:
    made = await create(nodes.clients[1], "payments", 3, {"retention.ms": "1000"})
    assert made.error_code == ErrorCode.none and made.topic_id != uuid_zero
    for node_id in (2, 3):
        client = nodes.clients[node_id]
        await eventually(functools.partial(seen, client, "payments"))
        topic = await metadata(client, "payments")
        assert (topic.topic_id, len(topic.partitions)) == (made.topic_id, 3)
        by_id = await client.request(ApiKey.METADATA, 12, {
            "topics": [{"topic_id": made.topic_id, "name": None}],
            "allow_auto_topic_creation": False})  # fmt: skip
        assert by_id.topics[0].name == "payments"
        described = await client.request(ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": "payments",
                           "configuration_keys": ["retention.ms"]}],
            "include_synonyms": False, "include_documentation": False})  # fmt: skip
        assert [(c.name, c.value) for c in described.results[0].configs] == [
            ("retention.ms", "1000")
        ]
        ends = await client.request(ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": "payments", "partitions": [
                {"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                for p in range(3)]}]})  # fmt: skip
        answered = [(p.error_code, p.offset) for p in ends.topics[0].partitions]
        assert answered == [(ErrorCode.none, 0)] * 3  # its logs on this node came up empty
    again = await create(nodes.clients[3], "payments", 3)
    assert again.error_code == ErrorCode.topic_already_exists


async def test_of_two_nodes_creating_one_name_at_once_exactly_one_wins(nodes: Nodes) -> None:
    for index in range(10):
        name = f"race-{index}"
        # One request on each node's connection at a time, both at once.
        pair = await asyncio.gather(
            *(create(nodes.clients[node_id], name, node_id) for node_id in (1, 2))
        )
        codes = sorted(a.error_code for a in pair)
        assert codes == sorted([ErrorCode.none, ErrorCode.topic_already_exists]), (name, pair)
        (won,) = [a for a in pair if a.error_code == ErrorCode.none]
        for client in nodes.clients.values():
            await eventually(functools.partial(seen, client, name))
            topic = await metadata(client, name)
            assert (topic.topic_id, len(topic.partitions)) == (won.topic_id, won.num_partitions)


async def fetch_offsets(client: WireClient, group: str) -> dict[str, list[int]] | None:
    """The group's committed offsets (None while its coordinator is still taking it over)."""
    fetched = await client.request(
        ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}]}
    )
    (found,) = fetched.groups
    if found.error_code in TAKING_OVER:
        return None
    assert found.error_code == ErrorCode.none, found
    return {t.name: [p.committed_offset for p in t.partitions] for t in found.topics}


def group_owned_by(nodes: Nodes, node_id: int) -> str:
    for index in range(1000):
        if nodes.owner(group := f"group-{index}") == node_id:
            return group
    raise AssertionError(f"no group placed on node {node_id}")


async def commit(client: WireClient, group: str, topic: str, offset: int) -> None:
    async def acknowledged() -> bool:
        partition = {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
        committed = await client.request(ApiKey.OFFSET_COMMIT, 8, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": topic, "partitions": [partition]}],
        })  # fmt: skip
        code = committed.topics[0].partitions[0].error_code
        assert code in (ErrorCode.none, *TAKING_OVER), committed
        return bool(code == ErrorCode.none)

    await eventually(acknowledged)


async def test_a_topic_deleted_from_another_node_is_gone_everywhere_with_its_offsets(
    nodes: Nodes,
) -> None:
    made = await create(nodes.clients[1], "doomed", 1)
    await create(nodes.clients[1], "kept", 1)
    group = group_owned_by(nodes, 3)
    coordinator = nodes.clients[3]
    await eventually(lambda: seen(coordinator, "doomed"))
    await eventually(lambda: seen(coordinator, "kept"))
    await commit(coordinator, group, "doomed", 5)
    await commit(coordinator, group, "kept", 6)
    await eventually(lambda: seen(nodes.clients[2], "doomed"))
    deleted = await nodes.clients[2].request(ApiKey.DELETE_TOPICS, 6, {
        "topics": [{"name": "doomed", "topic_id": None}], "timeout": 5000})  # fmt: skip
    assert [(r.error_code, r.topic_id) for r in deleted.responses] == [
        (ErrorCode.none, made.topic_id)
    ]
    for client in nodes.clients.values():
        gone = functools.partial(_answers, client, "doomed", ErrorCode.unknown_topic_or_partition)
        await eventually(gone)

    async def offsets_dropped() -> bool:
        return await fetch_offsets(coordinator, group) == {"kept": [6]}

    await eventually(offsets_dropped)
    again = await nodes.clients[1].request(ApiKey.DELETE_TOPICS, 6, {
        "topics": [{"name": "doomed", "topic_id": None}], "timeout": 5000})  # fmt: skip
    assert again.responses[0].error_code == ErrorCode.unknown_topic_or_partition
    remade = await create(nodes.clients[3], "doomed", 2)
    assert remade.error_code == ErrorCode.none and remade.topic_id != made.topic_id
    await eventually(lambda: seen(nodes.clients[1], "doomed", 2))
    assert (await metadata(nodes.clients[1], "doomed")).topic_id == remade.topic_id


async def _answers(client: WireClient, name: str, code: ErrorCode) -> bool:
    return bool((await metadata(client, name)).error_code == code)


async def heartbeat(
    client: WireClient, group: str, member: str, epoch: int, owned: list[dict[str, Any]]
) -> Any:
    beat = await client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
        "group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": None,
        "rack_id": None, "rebalance_timeout": 30_000, "subscribed_topic_names": ["growing"],
        "server_assignor": None, "topic_partitions": owned})  # fmt: skip
    if beat.error_code in TAKING_OVER:
        return None
    assert beat.error_code == ErrorCode.none, beat
    return beat


async def test_partitions_added_from_another_node_are_assigned_by_a_coordinator_on_a_third(
    nodes: Nodes,
) -> None:
    made = await create(nodes.clients[1], "growing", 2)
    group = group_owned_by(nodes, 2)
    coordinator = nodes.clients[2]
    await eventually(lambda: seen(coordinator, "growing"))
    member, epoch, owned = "", 0, list[dict[str, Any]]()
    assigned: dict[uuid.UUID, list[int]] = {}

    async def holds(partitions: list[int]) -> bool:
        nonlocal member, epoch, owned, assigned
        beat = await heartbeat(coordinator, group, member, epoch, owned)
        if beat is None:
            return False
        member, epoch = beat.member_id, beat.member_epoch
        if beat.assignment is not None:
            assigned = {t.topic_id: sorted(t.partitions) for t in beat.assignment.topic_partitions}
            owned = [{"topic_id": k, "partitions": v} for k, v in assigned.items()]
        return assigned == {made.topic_id: partitions}

    await eventually(lambda: holds([0, 1]))
    grown = await nodes.clients[3].request(ApiKey.CREATE_PARTITIONS, 3, {
        "topics": [{"name": "growing", "count": 5, "assignments": None}],
        "timeout": 5000, "validate_only": False})  # fmt: skip
    assert grown.results[0].error_code == ErrorCode.none, grown
    await eventually(lambda: holds([0, 1, 2, 3, 4]))
    again = await nodes.clients[1].request(ApiKey.CREATE_PARTITIONS, 3, {
        "topics": [{"name": "growing", "count": 4, "assignments": None}],
        "timeout": 5000, "validate_only": False})  # fmt: skip
    assert (again.results[0].error_code, again.results[0].error_message) == (
        ErrorCode.invalid_partitions,
        "Topic currently has 5 partitions, which is higher than the requested 4.",
    )


async def test_a_topic_just_made_on_one_node_is_grown_and_deleted_at_once_from_others(
    nodes: Nodes,
) -> None:
    # No wait for the notification: the nodes asked look the topic up in the catalogue.
    made = await create(nodes.clients[1], "fresh", 1)
    grown = await nodes.clients[2].request(ApiKey.CREATE_PARTITIONS, 3, {
        "topics": [{"name": "fresh", "count": 2, "assignments": None}],
        "timeout": 5000, "validate_only": False})  # fmt: skip
    assert grown.results[0].error_code == ErrorCode.none, grown
    deleted = await nodes.clients[3].request(ApiKey.DELETE_TOPICS, 6, {
        "topics": [{"name": None, "topic_id": made.topic_id}], "timeout": 5000})  # fmt: skip
    assert [(r.error_code, r.name) for r in deleted.responses] == [(ErrorCode.none, "fresh")]
