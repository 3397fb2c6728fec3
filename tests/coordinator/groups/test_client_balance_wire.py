"""Client-balance groups over a real connection: the extension APIs (keys 10000-10003) in
Kafka's framing, advertised by ApiVersions, with OffsetCommit/OffsetFetch and DescribeGroups
answering for such groups; and the records surviving a restart on the same data dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coordinator.testing.server import WireClient, running_server
from coordinator.wire import client_balance_schema as schema
from rebalance.errors import ErrorCode

API_VERSIONS, OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS = 18, 8, 9, 15
SETTINGS = ("group.min.session.timeout.ms=100",)


# the `node` and `client` fixtures (tests/conftest.py) start this node and connect to it
pytestmark = pytest.mark.node(topics=[("t", 4)], settings=SETTINGS)


async def join(client: WireClient, member: str, node_id: int, **extra: Any) -> Any:
    return await client.request(
        schema.HEARTBEAT_KEY,
        0,
        {
            "group_id": "g",
            "member_id": member,
            "member_epoch": 0,
            "source_count": 2,
            "node_id": node_id,
            "topics": ["t"],
            "session_timeout_ms": 10_000,
        }
        | extra,
    )


async def register(client: WireClient, member: str, epoch: int, *parts: tuple[int, int]) -> Any:
    return await client.request(
        schema.REGISTER_KEY,
        0,
        {
            "group_id": "g",
            "member_id": member,
            "member_epoch": epoch,
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": p, "bootstrap_offset": o} for p, o in parts],
                }
            ],
        },
    )


async def commit(client: WireClient, member: str, epoch: int, offsets: dict[int, int]) -> Any:
    response = await client.request(
        OFFSET_COMMIT,
        9,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": epoch,
            "member_id": member,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": p, "committed_offset": o} for p, o in offsets.items()
                    ],
                }
            ],
        },
    )
    return {int(p.partition_index): int(p.error_code) for p in response.topics[0].partitions}


async def test_api_versions_advertises_the_extension_apis(client: WireClient) -> None:
    response = await client.request(API_VERSIONS, 3, {})
    keys = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
    for key in (schema.HEARTBEAT_KEY, schema.REGISTER_KEY, schema.RELEASE_KEY, schema.DESCRIBE_KEY):
        assert keys[key] == (0, 0)


async def test_nodes_register_commit_describe_and_leave(client: WireClient) -> None:
    a = await join(client, "a", 0)
    assert (int(a.error_code), int(a.member_epoch), int(a.source_count)) == (0, 1, 2)
    b = await join(client, "b", 0)
    assert int(b.error_code) == ErrorCode.CLIENT_DUPLICATE_INDEXID == 430
    assert "held by a" in b.error_message
    b = await join(client, "b", 1)
    assert int(b.member_epoch) == 2

    registered = await register(client, "a", 1, (0, -1), (1, 50))
    parts = registered.topics[0].partitions
    assert [(int(p.partition_index), int(p.error_code), int(p.offset)) for p in parts] == [
        (0, 0, -1),
        (1, 0, 0),  # the partition is empty: 50 is clamped to its log end
    ]
    occupied = (await register(client, "b", 2, (1, -1))).topics[0].partitions[0]
    assert (int(occupied.error_code), occupied.holder) == (ErrorCode.PARTITION_OCCUPIED, "a")

    assert await commit(client, "a", 1, {0: 7, 1: 60}) == {0: 0, 1: 0}
    assert await commit(client, "b", 2, {1: 99}) == {1: ErrorCode.FENCED_MEMBER_EPOCH}
    fetched = await client.request(OFFSET_FETCH, 8, {"groups": [{"group_id": "g", "topics": None}]})
    offsets = {
        int(p.partition_index): int(p.committed_offset)
        for t in fetched.groups[0].topics
        for p in t.partitions
    }
    assert offsets == {0: 7, 1: 60}

    beat = await client.request(
        schema.HEARTBEAT_KEY,
        0,
        {
            "group_id": "g",
            "member_id": "a",
            "member_epoch": 1,
            "held": [{"topic": "t", "partitions": [0, 1]}],
        },
    )
    assert [(h.topic, list(h.partitions)) for h in beat.held] == [("t", [0, 1])]
    assert int(beat.heartbeat_interval_ms) > 0

    described = await client.request(schema.DESCRIBE_KEY, 0, {"group_ids": ["g", "nope"]})
    group, missing = described.groups
    assert (group.state, int(group.source_count), list(group.topics)) == ("Stable", 2, ["t"])
    assert [
        (n.member_id, int(n.node_id), [(h.topic, list(h.partitions)) for h in n.held])
        for n in group.nodes
    ] == [("a", 0, [("t", [0, 1])]), ("b", 1, [])]
    assert int(missing.error_code) == ErrorCode.GROUP_ID_NOT_FOUND

    classic = await client.request(DESCRIBE_GROUPS, 5, {"groups": ["g"]})
    assert classic.groups[0].protocol_type == "client-balance"
    assert [m.member_id for m in classic.groups[0].members] == ["a", "b"]

    released = await client.request(
        schema.RELEASE_KEY,
        0,
        {
            "group_id": "g",
            "member_id": "a",
            "member_epoch": 1,
            "topics": [{"name": "t", "partitions": [1]}],
        },
    )
    assert int(released.topics[0].partitions[0].error_code) == 0
    taken = (await register(client, "b", 2, (1, -1))).topics[0].partitions[0]
    assert (int(taken.error_code), int(taken.offset)) == (0, 60)

    left = await client.request(
        schema.HEARTBEAT_KEY, 0, {"group_id": "g", "member_id": "a", "member_epoch": -1}
    )
    assert int(left.error_code) == 0


async def test_the_group_survives_a_restart(tmp_path: Path) -> None:
    async with running_server(topics=[("t", 4)], settings=SETTINGS, data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        await join(client, "a", 0)
        await register(client, "a", 1, (2, 5))
        await client.close()
    async with running_server(settings=SETTINGS, data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        described = await client.request(schema.DESCRIBE_KEY, 0, {"group_ids": ["g"]})
        nodes = described.groups[0].nodes
        assert [(n.member_id, [list(h.partitions) for h in n.held]) for n in nodes] == [
            ("a", [[2]])
        ]
        again = (await register(client, "a", 1, (2, -1))).topics[0].partitions[0]
        assert (int(again.error_code), int(again.offset)) == (0, 0)  # 5 clamped to the end
        await client.close()
