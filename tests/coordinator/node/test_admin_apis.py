"""The topic admin APIs over a real connection, at every advertised version: CreateTopics,
DeleteTopics, CreatePartitions, DeleteRecords, DescribeCluster (and what they do to Metadata,
logs, Fetch, ListOffsets and groups' committed offsets)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero

from coordinator.testing.server import (
    RunningServer,
    WireClient,
    read_records,
    record_batch,
    running_server,
)

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS = 18, 19, 20, 21
CREATE_PARTITIONS, DESCRIBE_CLUSTER = 37, 60
DEFAULT_SOURCE, TOPIC_SOURCE = 5, 1


# the `node` and `client` fixtures (tests/conftest.py) start this node and connect to it
pytestmark = pytest.mark.node(topics=[("t1", 3)], settings=["num.partitions=2"])


def new_topic(
    name: str,
    partitions: int = -1,
    replication: int = -1,
    *,
    configs: dict[str, str | None] | None = None,
    assignments: list[tuple[int, list[int]]] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": [
            {"partition_index": index, "broker_ids": brokers}
            for index, brokers in assignments or []
        ],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


async def create(
    client: WireClient, version: int, *topics: dict[str, Any], validate_only: bool = False
) -> Any:
    return await client.request(
        CREATE_TOPICS,
        version,
        {"topics": list(topics), "timeout": 5000, "validate_only": validate_only},
    )


async def delete(client: WireClient, version: int, *topics: str | uuid.UUID) -> Any:
    if version >= 6:
        values: dict[str, Any] = {
            "topics": [
                {"name": None, "topic_id": t} if isinstance(t, uuid.UUID) else {"name": t}
                for t in topics
            ]
        }
    else:
        values = {"topic_names": list(topics)}
    return await client.request(DELETE_TOPICS, version, {**values, "timeout": 5000})


async def produce(client: WireClient, partition: int, *values: bytes) -> Any:
    response = await client.request(
        PRODUCE,
        9,
        {"acks": -1, "timeout": 1000, "topic_data": [
            {"name": "t1", "partition_data": [
                {"index": partition, "records": record_batch(list(values))}]}]},
    )  # fmt: skip
    return response.responses[0].partition_responses[0]


async def fetch(client: WireClient, partition: int, offset: int, version: int = 12) -> Any:
    response = await client.request(
        FETCH,
        version,
        {"max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
         "session_id": 0, "session_epoch": -1, "topics": [
             {"topic": "t1", "partitions": [
                 {"partition": partition, "fetch_offset": offset,
                  "partition_max_bytes": 1 << 20}]}]},
    )  # fmt: skip
    return response.responses[0].partitions[0]


async def earliest(client: WireClient, partition: int) -> int:
    response = await client.request(
        LIST_OFFSETS,
        7,
        {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t1", "partitions": [
                {"partition_index": partition, "timestamp": -2, "current_leader_epoch": -1}]}]},
    )  # fmt: skip
    return int(response.topics[0].partitions[0].offset)


async def metadata(client: WireClient, *names: str) -> dict[str, Any]:
    response = await client.request(
        METADATA,
        12,
        {"topics": [{"name": n} for n in names] if names else None,
         "allow_auto_topic_creation": False},
    )  # fmt: skip
    # Ordinary topics only: the group coordinator's internal __consumer_offsets is always there.
    return {t.name: t for t in response.topics if not t.is_internal}


async def test_api_versions_advertises_the_admin_apis(client: WireClient) -> None:
    response = await client.request(API_VERSIONS, 3, {})
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[CREATE_TOPICS] == (2, 7)
    assert versions[DELETE_TOPICS] == (1, 6)
    assert versions[CREATE_PARTITIONS] == (0, 3)
    assert versions[DELETE_RECORDS] == (0, 2)
    assert versions[DESCRIBE_CLUSTER] == (0, 2)


@pytest.mark.parametrize("version", range(2, 8))
async def test_create_topics_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    response = await create(
        client, version, new_topic("fresh", 4, 1, configs={"retention.ms": "1000"})
    )
    (result,) = response.topics
    assert (result.name, result.error_code) == ("fresh", ErrorCode.none)
    topic = node.broker.topics.get("fresh")
    assert topic is not None and len(topic.partitions) == 4
    assert topic.configs == {"retention.ms": "1000"}
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (4, 1)
        configs = {c.name: c for c in result.configs}
        assert configs["retention.ms"].value == "1000"
        assert configs["retention.ms"].config_source == TOPIC_SOURCE
        assert configs["cleanup.policy"].value == "delete"
        assert configs["cleanup.policy"].config_source == DEFAULT_SOURCE
    if version >= 7:
        assert result.topic_id == topic.topic_id
    listed = await metadata(client, "fresh")
    assert len(listed["fresh"].partitions) == 4


async def test_create_topics_defaults_come_from_the_server(
    node: RunningServer, client: WireClient
) -> None:
    response = await create(client, 7, new_topic("defaulted"))
    (result,) = response.topics
    assert result.error_code is ErrorCode.none
    assert (result.num_partitions, result.replication_factor) == (2, 1)  # num.partitions=2


async def test_create_topics_refusals(node: RunningServer, client: WireClient) -> None:
    await create(client, 7, new_topic("my.topic", 1, 1))
    response = await create(
        client,
        7,
        new_topic("t1", 1, 1),
        new_topic("bad/name", 1, 1),
        new_topic("zero", 0, 1),
        new_topic("triple", 1, 3),
        new_topic("noreplicas", 1, 0),
        new_topic("badconfig", 1, 1, configs={"retention.ms": "soon"}),
        new_topic("unknownconfig", 1, 1, configs={"no.such.config": "1"}),
        new_topic("twice", 1, 1),
        new_topic("twice", 2, 1),
        new_topic("my_topic", 1, 1),
    )
    codes = [(r.name, r.error_code) for r in response.topics]
    assert codes == [
        ("t1", ErrorCode.topic_already_exists),
        ("bad/name", ErrorCode.invalid_topic_exception),
        ("zero", ErrorCode.invalid_partitions),
        ("triple", ErrorCode.invalid_replication_factor),
        ("noreplicas", ErrorCode.invalid_replication_factor),
        ("badconfig", ErrorCode.invalid_config),
        ("unknownconfig", ErrorCode.invalid_config),
        ("twice", ErrorCode.invalid_request),
        ("twice", ErrorCode.invalid_request),
        ("my_topic", ErrorCode.invalid_topic_exception),  # '.' and '_' collide (metric names)
    ]
    assert all(r.error_message for r in response.topics)
    assert all(r.num_partitions == -1 and r.topic_id in (None, uuid_zero) for r in response.topics)
    assert [t.name for t in node.broker.topics] == ["my.topic", "t1"]


async def test_create_topics_with_an_explicit_assignment_on_this_node(
    node: RunningServer, client: WireClient
) -> None:
    node_id = node.broker.node_id
    response = await create(
        client,
        4,
        new_topic("placed", assignments=[(0, [node_id]), (1, [node_id])]),
        new_topic("elsewhere", assignments=[(0, [node_id + 1])]),
        new_topic("gap", assignments=[(0, [node_id]), (2, [node_id])]),
        new_topic("both", 2, assignments=[(0, [node_id])]),
    )
    codes = [(r.name, r.error_code) for r in response.topics]
    assert codes == [
        ("placed", ErrorCode.none),
        ("elsewhere", ErrorCode.invalid_replica_assignment),
        ("gap", ErrorCode.invalid_replica_assignment),
        ("both", ErrorCode.invalid_request),
    ]
    placed = node.broker.topics.get("placed")
    assert placed is not None and len(placed.partitions) == 2


async def test_create_topics_validate_only_creates_nothing(
    node: RunningServer, client: WireClient
) -> None:
    response = await create(client, 7, new_topic("maybe", 5, 1), validate_only=True)
    (result,) = response.topics
    assert (result.error_code, result.num_partitions) == (ErrorCode.none, 5)
    assert node.broker.topics.get("maybe") is None
    refused = await create(client, 7, new_topic("t1", 5, 1), validate_only=True)
    assert refused.topics[0].error_code is ErrorCode.topic_already_exists


async def test_created_topics_and_their_configs_survive_a_restart(tmp_path: Any) -> None:
    async with running_server(data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        response = await create(
            client, 7, new_topic("kept", 2, 1, configs={"cleanup.policy": "compact, delete"})
        )
        topic_id = response.topics[0].topic_id
        await client.close()
    async with running_server(data_dir=tmp_path) as node:
        topic = node.broker.topics.get("kept")
        assert topic is not None
        assert (topic.topic_id, len(topic.partitions)) == (topic_id, 2)
        assert topic.configs == {"cleanup.policy": "compact,delete"}


@pytest.mark.parametrize("version", range(1, 7))
async def test_delete_topics_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    topic = node.broker.topics.get("t1")
    assert topic is not None
    await produce(client, 0, b"a")
    directory = node.data_dir / "topics" / "t1"
    assert directory.is_dir()
    response = await delete(client, version, topic.topic_id if version >= 6 else "t1")
    (result,) = response.responses
    assert result.error_code is ErrorCode.none
    if version >= 6:
        assert (result.name, result.topic_id) == ("t1", topic.topic_id)
    assert node.broker.topics.get("t1") is None
    assert not directory.exists()
    assert await metadata(client) == {}
    gone = await metadata(client, "t1")
    assert gone["t1"].error_code is ErrorCode.unknown_topic_or_partition
    # The same name again is a new, empty topic with a new id.
    again = await create(client, 7, new_topic("t1", 1, 1))
    assert again.topics[0].topic_id not in (uuid_zero, topic.topic_id)
    fetched = await fetch(client, 0, 0)
    assert fetched.high_watermark == 0


async def test_delete_topics_refusals(node: RunningServer, client: WireClient) -> None:
    by_name = await delete(client, 5, "missing", "t1", "t1")
    assert [(r.name, r.error_code) for r in by_name.responses] == [
        ("missing", ErrorCode.unknown_topic_or_partition),
        ("t1", ErrorCode.invalid_request),
        ("t1", ErrorCode.invalid_request),
    ]
    unknown = uuid.uuid4()
    by_id = await delete(client, 6, unknown, unknown)
    assert [r.error_code for r in by_id.responses] == [ErrorCode.invalid_request] * 2
    by_id = await delete(client, 6, unknown)
    assert by_id.responses[0].error_code is ErrorCode.unknown_topic_id
    t1_id = node.broker.topics.get("t1").topic_id  # type: ignore[union-attr]
    both = await client.request(
        DELETE_TOPICS, 6, {"topics": [{"name": "t1", "topic_id": t1_id}], "timeout": 5000}
    )
    assert both.responses[0].error_code is ErrorCode.invalid_request
    v6_by_name = await delete(client, 6, "missing")
    assert v6_by_name.responses[0].error_code is ErrorCode.unknown_topic_or_partition
    assert node.broker.topics.get("t1") is not None
    by_name_at_v6 = await delete(client, 6, "t1")
    assert (by_name_at_v6.responses[0].error_code, by_name_at_v6.responses[0].topic_id) == (
        ErrorCode.none,
        t1_id,
    )


async def test_delete_topics_can_be_disabled() -> None:
    async with running_server(topics=[("t1", 1)], settings=["delete.topic.enable=false"]) as node:
        client = await WireClient.connect(node.host, node.port)
        response = await delete(client, 4, "t1")
        assert response.responses[0].error_code is ErrorCode.topic_deletion_disabled
        assert node.broker.topics.get("t1") is not None
        await client.close()


async def test_delete_topics_removes_groups_committed_offsets_durably(tmp_path: Any) -> None:
    async def committed_topics(client: WireClient) -> list[str]:
        fetched = await client.request(
            OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False}
        )
        return [t.name for t in fetched.topics]

    async with running_server(topics=[("t1", 1)], data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        await create(client, 7, new_topic("kept", 1, 1))
        commit = {
            "group_id": "g",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {"name": name, "partitions": [
                    {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
                     "committed_metadata": ""}]}
                for name in ("t1", "kept")
            ],
        }  # fmt: skip
        committed = await client.request(OFFSET_COMMIT, 8, commit)
        assert all(p.error_code is ErrorCode.none for t in committed.topics for p in t.partitions)
        assert await committed_topics(client) == ["kept", "t1"]
        await delete(client, 4, "t1")
        assert await committed_topics(client) == ["kept"]
        await client.close()
    async with running_server(data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        assert await committed_topics(client) == ["kept"]
        await client.close()


@pytest.mark.parametrize("version", range(0, 4))
async def test_create_partitions_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    response = await client.request(
        CREATE_PARTITIONS,
        version,
        {"topics": [{"name": "t1", "count": 5, "assignments": None}], "timeout": 5000,
         "validate_only": False},
    )  # fmt: skip
    assert [(r.name, r.error_code) for r in response.results] == [("t1", ErrorCode.none)]
    assert len((await metadata(client, "t1"))["t1"].partitions) == 5
    assert (await produce(client, 4, b"new")).error_code is ErrorCode.none


async def test_create_partitions_refusals_and_validate_only(
    node: RunningServer, client: WireClient
) -> None:
    node_id = node.broker.node_id

    async def grow(*topics: dict[str, Any], validate_only: bool = False) -> list[Any]:
        response = await client.request(
            CREATE_PARTITIONS,
            3,
            {"topics": list(topics), "timeout": 5000, "validate_only": validate_only},
        )
        return [(r.name, r.error_code) for r in response.results]

    await create(client, 7, new_topic("other", 1, 1))
    assert await grow(
        {"name": "t1", "count": 3, "assignments": None},
        {"name": "other", "count": 0, "assignments": None},
        {"name": "missing", "count": 4, "assignments": None},
    ) == [
        ("t1", ErrorCode.invalid_partitions),  # already has 3
        ("other", ErrorCode.invalid_partitions),  # fewer
        ("missing", ErrorCode.unknown_topic_or_partition),
    ]
    assert await grow(
        {"name": "t1", "count": 5, "assignments": [{"broker_ids": [node_id]}]},
        {"name": "other", "count": 2, "assignments": [{"broker_ids": [node_id + 7]}]},
    ) == [
        ("t1", ErrorCode.invalid_replica_assignment),
        ("other", ErrorCode.invalid_replica_assignment),
    ]
    assert (
        await grow(
            {"name": "t1", "count": 4, "assignments": None},
            {"name": "t1", "count": 5, "assignments": None},
        )
        == [("t1", ErrorCode.invalid_request)] * 2
    )
    assert await grow({"name": "t1", "count": 9, "assignments": None}, validate_only=True) == [
        ("t1", ErrorCode.none)
    ]
    topic = node.broker.topics.get("t1")
    assert topic is not None and len(topic.partitions) == 3
    assert await grow(
        {"name": "t1", "count": 5, "assignments": [{"broker_ids": [node_id]}] * 2}
    ) == [("t1", ErrorCode.none)]
    assert len(topic.partitions) == 5


async def test_grown_partitions_survive_a_restart(tmp_path: Any) -> None:
    async with running_server(topics=[("t1", 1)], data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        await client.request(
            CREATE_PARTITIONS,
            1,
            {"topics": [{"name": "t1", "count": 3}], "timeout": 5000, "validate_only": False},
        )
        await produce(client, 2, b"x")
        await client.close()
    async with running_server(data_dir=tmp_path) as node:
        topic = node.broker.topics.get("t1")
        assert topic is not None and len(topic.partitions) == 3
        assert topic.partitions[2].high_watermark == 1


async def delete_records(client: WireClient, version: int, *offsets: tuple[int, int]) -> Any:
    response = await client.request(
        DELETE_RECORDS,
        version,
        {"topics": [{"name": "t1", "partitions": [
            {"partition_index": p, "offset": o} for p, o in offsets]}], "timeout": 5000},
    )  # fmt: skip
    return [
        (p.partition_index, p.error_code, p.low_watermark) for p in response.topics[0].partitions
    ]


@pytest.mark.parametrize("version", range(0, 3))
async def test_delete_records_moves_the_log_start_at_every_version(
    client: WireClient, version: int
) -> None:
    for value in (b"a", b"b", b"c", b"d"):
        await produce(client, 0, value)
    assert await delete_records(client, version, (0, 2)) == [(0, ErrorCode.none, 2)]
    below = await fetch(client, 0, 1)
    assert below.error_code is ErrorCode.offset_out_of_range
    at = await fetch(client, 0, 2)
    assert (at.error_code, at.log_start_offset) == (ErrorCode.none, 2)
    assert [r.value for r in read_records(at.records)] == [b"c", b"d"]
    assert await earliest(client, 0) == 2
    assert (await produce(client, 0, b"e")).log_start_offset == 2


async def test_delete_records_edges(client: WireClient) -> None:
    await produce(client, 0, b"a", b"b", b"c")
    await produce(client, 1, b"x")
    assert await delete_records(client, 2, (0, 2), (1, 5), (9, 0)) == [
        (0, ErrorCode.none, 2),
        (1, ErrorCode.offset_out_of_range, -1),  # past the high watermark
        (9, ErrorCode.unknown_topic_or_partition, -1),
    ]
    # Never backwards; -1 means the high watermark.
    assert await delete_records(client, 2, (0, 1), (1, -1)) == [
        (0, ErrorCode.none, 2),
        (1, ErrorCode.none, 1),
    ]
    assert await delete_records(client, 2, (0, -5)) == [(0, ErrorCode.offset_out_of_range, -1)]
    # Offset 2 is inside the batch of a, b, c: the whole batch is served, as Kafka serves it
    # (consumers skip records below the offset they asked for).
    inside = await fetch(client, 0, 2)
    assert [r.value for r in read_records(inside.records)] == [b"a", b"b", b"c"]
    assert await delete_records(client, 2, (0, 3)) == [(0, ErrorCode.none, 3)]
    empty = await fetch(client, 0, 3)
    assert (empty.error_code, empty.records) == (ErrorCode.none, b"")


async def test_log_start_offset_survives_a_restart(tmp_path: Any) -> None:
    async with running_server(topics=[("t1", 1)], data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        for value in (b"a", b"b", b"c"):
            await produce(client, 0, value)
        await delete_records(client, 1, (0, 2))
        await client.close()
    async with running_server(data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        assert await earliest(client, 0) == 2
        assert (await fetch(client, 0, 0)).error_code is ErrorCode.offset_out_of_range
        await client.close()


@pytest.mark.parametrize("version", range(0, 3))
async def test_describe_cluster_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    response = await client.request(
        DESCRIBE_CLUSTER,
        version,
        {"include_cluster_authorized_operations": False, "endpoint_type": 1,
         "include_fenced_brokers": False},
    )  # fmt: skip
    assert response.error_code is ErrorCode.none
    assert response.cluster_id == node.broker.config.cluster_id
    assert response.controller_id == node.broker.node_id
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [
        (node.broker.node_id, node.host, node.port)
    ]


async def test_describe_cluster_has_no_controller_endpoints(client: WireClient) -> None:
    response = await client.request(
        DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 2}
    )
    assert response.error_code is ErrorCode.mismatched_endpoint_type
    assert response.brokers == ()
