"""Kafka's rules around the group APIs over a real connection: offsets are accepted only for
partitions that exist (at every advertised version), and members that never sync are removed."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.testing.server import RunningServer, WireClient, running_server
from coordinator.wire.api_keys import ApiKey
from rebalance.testing import consumer_subscription

Offsets = Mapping[str, Sequence[tuple[int, int]]]


# the `node` and `client` fixtures (tests/conftest.py) start this node and connect to it
pytestmark = pytest.mark.node(topics=[("t1", 2)])


async def commit(
    client: WireClient,
    version: int,
    group: str,
    offsets: Offsets,
    *,
    generation: int = -1,
    member_id: str = "",
) -> dict[tuple[str, int], ErrorCode]:
    """OffsetCommit at `version`; the error of every (topic, partition) answered."""
    response = await client.request(
        ApiKey.OFFSET_COMMIT,
        version,
        {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "committed_offset": o, "committed_metadata": ""}
                        for p, o in partitions
                    ],
                }
                for topic, partitions in offsets.items()
            ],
        },
    )
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


async def fetch(
    client: WireClient, version: int, group: str, partitions: Mapping[str, Sequence[int]] | None
) -> dict[tuple[str, int], tuple[int, ErrorCode]]:
    """OffsetFetch at `version` (None: every committed offset, v2+); (offset, error) of each."""
    topics = (
        None
        if partitions is None
        else [{"name": t, "partition_indexes": list(ps)} for t, ps in partitions.items()]
    )
    if version >= 8:
        response = await client.request(
            ApiKey.OFFSET_FETCH,
            version,
            {"groups": [{"group_id": group, "topics": topics}], "require_stable": False},
        )
        (answer,) = response.groups
        assert answer.error_code is ErrorCode.none
        found = answer.topics
    else:
        response = await client.request(
            ApiKey.OFFSET_FETCH, version, {"group_id": group, "topics": topics}
        )
        if version >= 2:
            assert response.error_code is ErrorCode.none
        found = response.topics
    return {
        (t.name, p.partition_index): (p.committed_offset, p.error_code)
        for t in found
        for p in t.partitions
    }


async def group_ids(client: WireClient) -> list[str]:
    response = await client.request(ApiKey.LIST_GROUPS, 4, {"states_filter": []})
    return [g.group_id for g in response.groups]


UNKNOWN = ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("version", range(2, 10))
async def test_commit_for_a_missing_topic_or_partition_is_refused_and_not_stored(
    client: WireClient, version: int
) -> None:
    """Kafka answers UNKNOWN_TOPIC_OR_PARTITION for partitions the broker does not have (an
    unknown topic, an index past the partition count) and stores only the others."""
    group = f"g{version}"
    errors = await commit(
        client, version, group, {"t1": [(0, 5), (2, 6), (-1, 7)], "nope": [(0, 8)]}
    )
    assert errors == {("t1", 0): ErrorCode.none, ("t1", 2): UNKNOWN, ("t1", -1): UNKNOWN,
                      ("nope", 0): UNKNOWN}  # fmt: skip
    fetch_version = version  # commits from v2, fetches to v9: the same range
    asked = await fetch(client, fetch_version, group, {"t1": [0, 1, 2], "nope": [0]})
    # OffsetFetch v1+ does not look at topics: a partition without an offset is -1, NONE.
    none = ErrorCode.none
    assert asked == {("t1", 0): (5, none), ("t1", 1): (-1, none), ("t1", 2): (-1, none),
                     ("nope", 0): (-1, none)}  # fmt: skip
    assert await fetch(client, fetch_version, group, None) == {("t1", 0): (5, ErrorCode.none)}


@pytest.mark.parametrize("version", range(1, 10))
async def test_fetch_of_a_missing_topic_answers_no_offset_at_every_version(
    client: WireClient, version: int
) -> None:
    """OffsetFetch v1+ goes to the coordinator without looking at topics (only v0, read from
    ZooKeeper, answered UNKNOWN_TOPIC_OR_PARTITION): -1 and NONE, for a known group too."""
    await commit(client, 9, "known", {"t1": [(0, 2)]})
    for group in ("known", "unknown"):
        asked = await fetch(client, version, group, {"nope": [0], "t1": [7]})
        assert asked == {("nope", 0): (-1, ErrorCode.none), ("t1", 7): (-1, ErrorCode.none)}


@pytest.mark.parametrize("version", [2, 3, 8, 9])
async def test_commit_of_only_missing_partitions_skips_the_group_checks(
    client: WireClient, version: int
) -> None:
    """Kafka never hands such a request to the coordinator: no ILLEGAL_GENERATION for a made-up
    generation, no group created."""
    errors = await commit(
        client, version, "ghosts", {"nope": [(0, 1)]}, generation=7, member_id="m"
    )
    assert errors == {("nope", 0): UNKNOWN}
    errors = await commit(client, version, "simple", {"nope": [(0, 1)], "t1": [(9, 1)]})
    assert errors == {("nope", 0): UNKNOWN, ("t1", 9): UNKNOWN}
    assert await group_ids(client) == []


@pytest.mark.parametrize(
    ("version", "group_error"),
    [(8, ErrorCode.illegal_generation), (9, ErrorCode.group_id_not_found)],
)
async def test_group_errors_apply_to_the_existing_partitions_only(
    client: WireClient, version: int, group_error: ErrorCode
) -> None:
    errors = await commit(
        client, version, "unknown", {"t1": [(1, 3)], "nope": [(0, 3)]}, generation=4, member_id="m"
    )
    assert errors == {("t1", 1): group_error, ("nope", 0): UNKNOWN}


async def test_offsets_for_a_topic_created_later_are_accepted(
    node: RunningServer, client: WireClient
) -> None:
    assert await commit(client, 9, "later", {"t2": [(0, 4)]}) == {("t2", 0): UNKNOWN}
    node.broker.topics.create("t2", 1)
    assert await commit(client, 9, "later", {"t2": [(0, 4)]}) == {("t2", 0): ErrorCode.none}
    assert await fetch(client, 8, "later", None) == {("t2", 0): (4, ErrorCode.none)}


async def test_v9_commits_and_fetches_of_a_consumer_group_carry_the_member_epoch(
    client: WireClient,
) -> None:
    """KIP-848 over the wire: a member's OffsetCommit and OffsetFetch v9 name it and its
    epoch; an older epoch is STALE_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID, and a
    fetch naming nobody (what admin clients and librdkafka send) is answered."""
    joined = await client.request(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        {"group_id": "kip848", "member_id": "m1", "member_epoch": 0,
         "rebalance_timeout": 30_000, "subscribed_topic_names": ["t1"], "topic_partitions": []},
    )  # fmt: skip
    assert joined.error_code is ErrorCode.none and joined.member_epoch == 2
    epoch = joined.member_epoch
    fenced = ErrorCode.stale_member_epoch
    current = await commit(client, 9, "kip848", {"t1": [(0, 5)]}, generation=epoch, member_id="m1")
    assert current == {("t1", 0): ErrorCode.none}
    stale = await commit(client, 9, "kip848", {"t1": [(1, 6)]}, generation=0, member_id="m1")
    assert stale == {("t1", 1): fenced}

    async def fetch_as(member_id: str | None, member_epoch: int) -> Any:
        response = await client.request(
            ApiKey.OFFSET_FETCH,
            9,
            {"groups": [{"group_id": "kip848", "member_id": member_id,
                         "member_epoch": member_epoch, "topics": None}], "require_stable": True},
        )  # fmt: skip
        (group,) = response.groups
        offsets = {(t.name, p.partition_index): p.committed_offset
                   for t in group.topics for p in t.partitions}  # fmt: skip
        return group.error_code, offsets

    assert await fetch_as("m1", epoch) == (ErrorCode.none, {("t1", 0): 5})
    assert await fetch_as(None, -1) == (ErrorCode.none, {("t1", 0): 5})
    assert await fetch_as("m1", epoch - 1) == (fenced, {})
    assert await fetch_as("ghost", epoch) == (ErrorCode.unknown_member_id, {})


SYNC_TIMEOUT_SETTINGS = [
    "group.initial.rebalance.delay.ms=300",
    "group.min.session.timeout.ms=1000",
]
REBALANCE_TIMEOUT_MS = 1000


async def join(client: WireClient, member_id: str) -> Any:
    return await client.request(
        ApiKey.JOIN_GROUP,
        5,
        {
            "group_id": "sync-timeout",
            "session_timeout": 10_000,  # far longer than the test: no session expires
            "rebalance_timeout": REBALANCE_TIMEOUT_MS,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": consumer_subscription("t1")}],
        },
    )


async def heartbeat(client: WireClient, member_id: str, generation: int) -> ErrorCode:
    response = await client.request(
        ApiKey.HEARTBEAT,
        3,
        {
            "group_id": "sync-timeout",
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": None,
        },
    )
    return response.error_code  # type: ignore[no-any-return]


async def test_members_that_never_sync_are_removed_and_the_synced_leader_rebalances() -> None:
    """Kafka's pending-sync rule end to end: three members join, only the leader sends
    SyncGroup; one rebalance timeout later the two silent followers are gone and the leader,
    still a member, hears REBALANCE_IN_PROGRESS and forms the next generation alone."""
    async with running_server(topics=[("t1", 2)], settings=SYNC_TIMEOUT_SETTINGS) as node:
        clients = [await WireClient.connect(node.host, node.port) for _ in range(3)]
        try:
            required = [await join(c, "") for c in clients]
            assert {r.error_code for r in required} == {ErrorCode.member_id_required}
            joined = await asyncio.gather(
                *(join(c, r.member_id) for c, r in zip(clients, required, strict=True))
            )
            assert {r.error_code for r in joined} == {ErrorCode.none}
            generation, leader = joined[0].generation_id, joined[0].leader
            by_member = {r.member_id: c for r, c in zip(joined, clients, strict=True)}
            followers = [m for m in by_member if m != leader]
            synced = await by_member[leader].request(
                ApiKey.SYNC_GROUP,
                3,
                {
                    "group_id": "sync-timeout",
                    "generation_id": generation,
                    "member_id": leader,
                    "group_instance_id": None,
                    "assignments": [{"member_id": m, "assignment": b""} for m in by_member],
                },
            )
            assert synced.error_code is ErrorCode.none
            assert await heartbeat(by_member[leader], leader, generation) is ErrorCode.none
            await asyncio.sleep(REBALANCE_TIMEOUT_MS / 1000 + 0.5)
            assert await heartbeat(by_member[leader], leader, generation) is (
                ErrorCode.rebalance_in_progress
            )
            for follower in followers:
                assert await heartbeat(by_member[follower], follower, generation) is (
                    ErrorCode.unknown_member_id
                )
            described = await clients[0].request(
                ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["sync-timeout"]}
            )
            (group,) = described.groups
            assert group.group_state == "PreparingRebalance"
            assert [m.member_id for m in group.members] == [leader]
            rejoined = await join(by_member[leader], leader)
            assert rejoined.error_code is ErrorCode.none
            assert (rejoined.generation_id, rejoined.leader) == (generation + 1, leader)
        finally:
            for c in clients:
                await c.close()


async def delete_offsets(
    client: WireClient, group: str, partitions: Mapping[str, Sequence[int]]
) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
    response = await client.request(
        ApiKey.OFFSET_DELETE,
        0,
        {
            "group_id": group,
            "topics": [
                {"name": t, "partitions": [{"partition_index": p} for p in ps]}
                for t, ps in partitions.items()
            ],
        },
    )
    errors = {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }
    return response.error_code, errors


async def test_offset_delete_refuses_missing_partitions_and_deletes_the_others(
    client: WireClient,
) -> None:
    """Kafka's broker checks OffsetDelete's partitions as it checks OffsetCommit's."""
    assert await commit(client, 9, "old", {"t1": [(0, 3), (1, 4)]}) == {
        ("t1", 0): ErrorCode.none,
        ("t1", 1): ErrorCode.none,
    }
    error, errors = await delete_offsets(client, "old", {"t1": [0, 5], "nope": [0]})
    assert error is ErrorCode.none
    assert errors == {("t1", 0): ErrorCode.none, ("t1", 5): UNKNOWN, ("nope", 0): UNKNOWN}
    assert await fetch(client, 8, "old", None) == {("t1", 1): (4, ErrorCode.none)}


async def test_offset_delete_still_reports_the_group_error(client: WireClient) -> None:
    """The coordinator is asked even with no partition left: an unknown group is
    GROUP_ID_NOT_FOUND, which replaces the per-partition answers."""
    assert await delete_offsets(client, "missing", {"nope": [0]}) == (
        ErrorCode.group_id_not_found,
        {},
    )


NOT_REQUESTED = -(2**31)
# Bit n for Kafka's ACL operation code n: what a broker without an authorizer allows.
GROUP_OPS = {3, 6, 8, 10, 11}  # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
TOPIC_OPS = {3, 4, 5, 6, 7, 8, 10, 11}  # READ WRITE CREATE DELETE ALTER DESCRIBE *_CONFIGS
CLUSTER_OPS = {5, 7, 8, 9, 10, 11, 12}  # CREATE ALTER DESCRIBE CLUSTER_ACTION *_CONFIGS IDEMP.


def operations(bits: int) -> set[int]:
    return {n for n in range(32) if bits & (1 << n)}


@pytest.mark.parametrize("version", [3, 4, 5])
async def test_describe_groups_gives_the_group_operations_when_asked(
    client: WireClient, version: int
) -> None:
    """KIP-430, as Kafka answers without an authorizer: every operation on a group."""
    await commit(client, 9, "described", {"t1": [(0, 1)]})
    for asked in (True, False):
        response = await client.request(
            ApiKey.DESCRIBE_GROUPS,
            version,
            {"groups": ["described", "never-seen"], "include_authorized_operations": asked},
        )
        for group in response.groups:
            assert group.error_code is ErrorCode.none
            if asked:
                assert operations(group.authorized_operations) == GROUP_OPS
            else:
                assert group.authorized_operations == NOT_REQUESTED


@pytest.mark.parametrize("version", [8, 10, 11, 13])
async def test_metadata_gives_topic_and_cluster_operations_when_asked(
    client: WireClient, version: int
) -> None:
    values: dict[str, Any] = {
        "topics": [{"name": "t1"}, {"name": "nope"}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": True,
    }
    if version <= 10:
        values["include_cluster_authorized_operations"] = True
    response = await client.request(ApiKey.METADATA, version, values)
    assert [operations(t.topic_authorized_operations) for t in response.topics] == [TOPIC_OPS] * 2
    if version <= 10:
        assert operations(response.cluster_authorized_operations) == CLUSTER_OPS
    plain = await client.request(ApiKey.METADATA, version, {"topics": [{"name": "t1"}]})
    assert plain.topics[0].topic_authorized_operations == NOT_REQUESTED
    if version <= 10:
        assert plain.cluster_authorized_operations == NOT_REQUESTED


async def test_describe_cluster_gives_the_cluster_operations_when_asked(
    client: WireClient,
) -> None:
    asked = await client.request(
        ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": True}
    )
    assert operations(asked.cluster_authorized_operations) == CLUSTER_OPS
    plain = await client.request(
        ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}
    )
    assert plain.cluster_authorized_operations == NOT_REQUESTED
