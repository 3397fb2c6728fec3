"""`__consumer_offsets` is an internal topic of a node running the group coordinator, as on Kafka:
listed with is_internal, found by name and id, never auto-created, not writable by producers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import OperationalError
from coordinator.testing.server import RunningServer, WireClient, record_batch, running_server

PRODUCE, METADATA, OFFSET_COMMIT = 0, 3, 8
OFFSETS = "__consumer_offsets"
SETTINGS = ["offsets.topic.num.partitions=7", "auto.create.topics.enable=true"]
UNKNOWN = ErrorCode.unknown_topic_or_partition


# the `node` and `client` fixtures (tests/conftest.py) start this node and connect to it
pytestmark = pytest.mark.node(topics=[("t1", 2)], settings=SETTINGS)


@pytest.mark.parametrize("version", [1, 5, 9, 12, 13])
async def test_metadata_for_all_topics_lists_it_as_internal(
    node: RunningServer, client: WireClient, version: int
) -> None:
    response = await client.request(METADATA, version, {"topics": None})
    topics = {t.name: t for t in response.topics}
    assert set(topics) == {OFFSETS, "t1"}
    offsets = topics[OFFSETS]
    assert offsets.is_internal and not topics["t1"].is_internal
    assert offsets.error_code is ErrorCode.none
    assert [p.partition_index for p in offsets.partitions] == list(range(7))
    assert {p.leader_id for p in offsets.partitions} == {node.broker.node_id}


async def test_metadata_v0_for_all_topics_lists_it(client: WireClient) -> None:
    response = await client.request(METADATA, 0, {"topics": []})
    assert {t.name: len(t.partitions) for t in response.topics} == {OFFSETS: 7, "t1": 2}


@pytest.mark.parametrize("allow", [False, True])
async def test_asked_by_name_it_is_found_and_never_created_as_an_ordinary_topic(
    node: RunningServer, client: WireClient, allow: bool
) -> None:
    response = await client.request(
        METADATA, 9, {"topics": [{"name": OFFSETS}], "allow_auto_topic_creation": allow}
    )
    (topic,) = response.topics
    assert (topic.name, topic.error_code, topic.is_internal) == (OFFSETS, ErrorCode.none, True)
    assert len(topic.partitions) == 7
    assert node.broker.topics.get(OFFSETS) is None
    assert not (node.data_dir / "topics" / OFFSETS).exists()


async def test_found_by_name_with_auto_creation_off() -> None:
    async with running_server(settings=["auto.create.topics.enable=false"]) as node:
        client = await WireClient.connect(node.host, node.port)
        response = await client.request(METADATA, 13, {"topics": [{"name": OFFSETS}]})
        await client.close()
    (topic,) = response.topics
    assert topic.error_code is ErrorCode.none and len(topic.partitions) == 50  # Kafka's default


async def test_found_by_its_topic_id_which_survives_a_restart(tmp_path: Path) -> None:
    ids = []
    for _ in range(2):
        async with running_server(data_dir=tmp_path, settings=SETTINGS) as node:
            client = await WireClient.connect(node.host, node.port)
            listed = await client.request(METADATA, 12, {"topics": None})
            (topic_id,) = [t.topic_id for t in listed.topics if t.name == OFFSETS]
            by_id = await client.request(METADATA, 12, {"topics": [{"topic_id": topic_id}]})
            await client.close()
        assert [(t.name, t.is_internal) for t in by_id.topics] == [(OFFSETS, True)]
        ids.append(topic_id)
    assert ids[0] == ids[1] and ids[0].int != 0


async def produce(client: WireClient, version: int, partition: int, **topic: object) -> object:
    response = await client.request(
        PRODUCE,
        version,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {**topic, "partition_data": [{"index": partition, "records": record_batch([b"x"])}]}
            ],
        },
    )
    return response.responses[0].partition_responses[0]


@pytest.mark.parametrize("version", [3, 8, 9, 12])
async def test_producing_to_it_is_refused_as_kafka_refuses_it(
    client: WireClient, version: int
) -> None:
    refused = await produce(client, version, 0, name=OFFSETS)
    assert refused.error_code is ErrorCode.invalid_topic_exception  # type: ignore[attr-defined]
    if version >= 8:
        message = refused.error_message  # type: ignore[attr-defined]
        assert message == f"Cannot append to internal topic {OFFSETS}"
    missing = await produce(client, version, 7, name=OFFSETS)
    assert missing.error_code is ErrorCode.unknown_topic_or_partition  # type: ignore[attr-defined]


async def test_producing_to_it_by_topic_id_is_refused(client: WireClient) -> None:
    listed = await client.request(METADATA, 13, {"topics": None})
    (topic_id,) = [t.topic_id for t in listed.topics if t.name == OFFSETS]
    refused = await produce(client, 13, 3, topic_id=topic_id)
    assert refused.error_code is ErrorCode.invalid_topic_exception  # type: ignore[attr-defined]


async def test_offsets_may_be_committed_for_its_partitions(client: WireClient) -> None:
    """Kafka's commit check asks only whether the partition exists, internal or not."""
    response = await client.request(
        OFFSET_COMMIT,
        9,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": OFFSETS,
                    "partitions": [
                        {"partition_index": p, "committed_offset": 1, "committed_metadata": ""}
                        for p in (6, 7)
                    ],
                }
            ],
        },
    )
    errors = [p.error_code for p in response.topics[0].partitions]
    assert errors == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]


async def test_a_node_without_the_group_coordinator_has_no_such_topic() -> None:
    async with running_server(groups=False, settings=["auto.create.topics.enable=false"]) as node:
        client = await WireClient.connect(node.host, node.port)
        response = await client.request(METADATA, 13, {"topics": None})
        await client.close()
    assert response.topics == ()


async def test_it_cannot_be_created_at_start(tmp_path: Path) -> None:
    with pytest.raises(OperationalError, match=f"topic {OFFSETS} is internal"):
        async with running_server(data_dir=tmp_path, topics=[(OFFSETS, 3)]):
            pass
    assert not (tmp_path / "topics" / OFFSETS).exists()


async def test_an_ordinary_topic_of_that_name_in_the_data_dir_stops_the_start(
    tmp_path: Path,
) -> None:
    """A data dir from before: the topic was auto-created as an ordinary one. Nothing of it is
    touched; the operator is told where it is."""
    async with running_server(data_dir=tmp_path, groups=False, topics=[(OFFSETS, 1)]):
        pass
    with pytest.raises(OperationalError, match=r"move .*__consumer_offsets out of the data dir"):
        async with running_server(data_dir=tmp_path):
            pass
    assert (tmp_path / "topics" / OFFSETS / "topic.json").exists()


CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, CREATE_PARTITIONS = 19, 20, 21, 37


async def offsets_topic_id(client: WireClient) -> Any:
    listed = await client.request(METADATA, 13, {"topics": None})
    (topic_id,) = [t.topic_id for t in listed.topics if t.name == OFFSETS]
    return topic_id


@pytest.mark.parametrize("version", [2, 5, 7])
async def test_create_topics_answers_that_it_exists(client: WireClient, version: int) -> None:
    response = await client.request(
        CREATE_TOPICS,
        version,
        {
            "topics": [
                {"name": OFFSETS, "num_partitions": 3, "replication_factor": 1,
                 "assignments": [], "configs": []}
            ],
            "timeout": 5000,
            "validate_only": False,
        },
    )  # fmt: skip
    assert response.topics[0].error_code is ErrorCode.topic_already_exists


@pytest.mark.parametrize("version", [1, 4, 6])
async def test_delete_topics_refuses_it(
    node: RunningServer, client: WireClient, version: int
) -> None:
    """DIFFERS from Kafka, which would delete it (see coordinator.partition_log.internal)."""
    if version >= 6:
        values: dict[str, Any] = {
            "topics": [{"name": None, "topic_id": await offsets_topic_id(client)}]
        }
    else:
        values = {"topic_names": [OFFSETS]}
    response = await client.request(DELETE_TOPICS, version, {**values, "timeout": 5000})
    (answer,) = response.responses
    assert answer.error_code is ErrorCode.invalid_topic_exception
    if version >= 5:
        assert "internal topic" in answer.error_message
    assert node.broker.internal_topics.get(OFFSETS) is not None


@pytest.mark.parametrize("version", [0, 2])
async def test_delete_records_of_it_is_refused_as_kafka_refuses_it(
    client: WireClient, version: int
) -> None:
    response = await client.request(
        DELETE_RECORDS,
        version,
        {"topics": [{"name": OFFSETS, "partitions": [
            {"partition_index": p, "offset": 0} for p in (0, 7)]}], "timeout": 5000},
    )  # fmt: skip
    errors = [(p.partition_index, p.error_code) for p in response.topics[0].partitions]
    assert errors == [(0, ErrorCode.invalid_topic_exception), (7, UNKNOWN)]


async def test_create_partitions_cannot_grow_it(client: WireClient) -> None:
    """DIFFERS from Kafka, which would grow it and move groups between partitions."""
    response = await client.request(
        CREATE_PARTITIONS,
        3,
        {"topics": [{"name": OFFSETS, "count": 9, "assignments": None}], "timeout": 5000,
         "validate_only": False},
    )  # fmt: skip
    assert response.results[0].error_code is ErrorCode.invalid_topic_exception
    listed = await client.request(METADATA, 13, {"topics": [{"name": OFFSETS}]})
    assert len(listed.topics[0].partitions) == 7


FETCH, LIST_OFFSETS = 1, 2


@pytest.mark.parametrize("version", [11, 12, 16])
async def test_fetch_reads_it_as_empty(client: WireClient, version: int) -> None:
    """DIFFERS: Kafka returns the coordinator's records; here they are in groups.sqlite."""
    topic_id = await offsets_topic_id(client)
    answers = {}
    for partition, offset in ((0, 0), (1, 5), (7, 0)):
        response = await client.request(
            FETCH,
            version,
            {"max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 1,
             "session_id": 0, "session_epoch": -1,
             "topics": [{"topic": OFFSETS, "topic_id": topic_id, "partitions": [
                 {"partition": partition, "fetch_offset": offset,
                  "partition_max_bytes": 1 << 20}]}]},
        )  # fmt: skip
        (answer,) = response.responses[0].partitions
        answers[partition] = (answer.error_code, answer.high_watermark, answer.records)
    assert answers[0][:2] == (ErrorCode.none, 0) and not answers[0][2]  # no records
    assert answers[1][0] is ErrorCode.offset_out_of_range
    assert answers[7][0] is UNKNOWN


@pytest.mark.parametrize("version", [3, 7, 11])
async def test_list_offsets_reads_it_as_empty(client: WireClient, version: int) -> None:
    response = await client.request(
        LIST_OFFSETS,
        version,
        {"replica_id": -1, "isolation_level": 1, "topics": [{"name": OFFSETS, "partitions": [
            {"partition_index": p, "timestamp": t, "current_leader_epoch": -1}
            for p, t in ((0, -2), (1, -1), (2, 1_700_000_000_000), (7, -1))]}]},
    )  # fmt: skip
    found = [(p.error_code, p.offset) for p in response.topics[0].partitions]
    assert found == [(ErrorCode.none, 0), (ErrorCode.none, 0), (ErrorCode.none, -1), (UNKNOWN, -1)]


DESCRIBE_CONFIGS, ALTER_CONFIGS, TOPIC_RESOURCE = 32, 33, 2


@pytest.mark.parametrize("version", [1, 4])
async def test_describe_configs_shows_the_configs_kafka_gives_it(
    client: WireClient, version: int
) -> None:
    response = await client.request(
        DESCRIBE_CONFIGS,
        version,
        {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": OFFSETS,
                        "configuration_keys": None}],
         "include_synonyms": False, "include_documentation": False},
    )  # fmt: skip
    (result,) = response.results
    assert result.error_code is ErrorCode.none
    configs = {c.name: c.value for c in result.configs}
    assert configs["cleanup.policy"] == "compact"
    assert configs["compression.type"] == "producer"
    assert configs["segment.bytes"] == "104857600"
    assert configs["retention.ms"] == "604800000"  # the topic default


async def test_alter_configs_of_it_is_refused(client: WireClient) -> None:
    """DIFFERS: Kafka would alter them; nothing here would read them."""
    response = await client.request(
        ALTER_CONFIGS,
        2,
        {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": OFFSETS,
                        "configs": [{"name": "retention.ms", "value": "1000"}]}],
         "validate_only": False},
    )  # fmt: skip
    (answer,) = response.responses
    assert answer.error_code is ErrorCode.invalid_request
    assert "internal" in answer.error_message
