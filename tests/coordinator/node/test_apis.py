"""The built-in APIs over a real connection: ApiVersions, Metadata, FindCoordinator, Produce,
Fetch, ListOffsets and InitProducerId, at the versions real clients use."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.testing.server import (
    RunningServer,
    WireClient,
    read_records,
    record_batch,
    running_server,
)

PRODUCE, FETCH, LIST_OFFSETS, METADATA, FIND_COORDINATOR, API_VERSIONS, INIT_PRODUCER_ID = (
    0, 1, 2, 3, 10, 18, 22,
)  # fmt: skip


# the `node` and `client` fixtures (tests/conftest.py) start this node and connect to it
pytestmark = pytest.mark.node(topics=[("t1", 3)], settings=["num.partitions=2"])


def t1_id(node: RunningServer) -> uuid.UUID:
    topic = node.broker.topics.get("t1")
    assert topic is not None
    return topic.topic_id


async def produce(client: WireClient, partition: int, *values: bytes, version: int = 9) -> Any:
    response = await client.request(
        PRODUCE,
        version,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {
                    "name": "t1",
                    "partition_data": [{"index": partition, "records": record_batch(list(values))}],
                }
            ],
        },
    )
    return response.responses[0].partition_responses[0]


def fetch_request(offset: int, *, max_wait: int = 0, partition: int = 0) -> dict[str, Any]:
    return {
        "max_wait": max_wait,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 1,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "t1",
                "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }


@pytest.mark.parametrize("version", [0, 3, 4])
async def test_api_versions_lists_every_builtin_api(client: WireClient, version: int) -> None:
    response = await client.request(API_VERSIONS, version, {})
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[PRODUCE][0] >= 3  # librdkafka will not fetch without Produce v3+
    assert versions[FETCH] == (4, 18)
    assert versions[METADATA] == (0, 13)
    assert versions[FIND_COORDINATOR] == (0, 6)
    assert versions[LIST_OFFSETS] == (1, 11)
    assert versions[API_VERSIONS] == (0, 4)


async def test_metadata_all_topics_and_brokers_only(
    node: RunningServer, client: WireClient
) -> None:
    everything = await client.request(METADATA, 13, {"topics": None})
    ordinary = [t for t in everything.topics if not t.is_internal]
    assert [t.name for t in ordinary] == ["t1"]
    assert ordinary[0].topic_id == t1_id(node)
    assert [len(t.partitions) for t in ordinary] == [3]
    assert everything.brokers[0].port == node.port
    brokers_only = await client.request(METADATA, 13, {"topics": []})
    assert brokers_only.topics == ()
    v0_all = await client.request(METADATA, 0, {"topics": []})
    assert [t.name for t in v0_all.topics] == ["__consumer_offsets", "t1"]  # v0: no is_internal


async def test_metadata_auto_creates_only_when_allowed(client: WireClient) -> None:
    refused = await client.request(
        METADATA, 13, {"topics": [{"name": "new1"}], "allow_auto_topic_creation": False}
    )
    assert refused.topics[0].error_code is ErrorCode.unknown_topic_or_partition
    created = await client.request(
        METADATA, 5, {"topics": [{"name": "new1"}], "allow_auto_topic_creation": True}
    )
    assert created.topics[0].error_code is ErrorCode.none
    assert len(created.topics[0].partitions) == 2  # num.partitions=2
    invalid = await client.request(METADATA, 5, {"topics": [{"name": "bad/name"}]})
    assert invalid.topics[0].error_code is ErrorCode.invalid_topic_exception


async def test_metadata_auto_create_disabled_by_config() -> None:
    async with running_server(settings=["auto.create.topics.enable=false"]) as node:
        client = await WireClient.connect(node.host, node.port)
        response = await client.request(METADATA, 3, {"topics": [{"name": "x"}]})
        assert response.topics[0].error_code is ErrorCode.unknown_topic_or_partition
        await client.close()


async def test_metadata_lookup_by_topic_id(node: RunningServer, client: WireClient) -> None:
    found = await client.request(
        METADATA, 12, {"topics": [{"topic_id": t1_id(node), "name": None}]}
    )
    assert (found.topics[0].name, found.topics[0].error_code) == ("t1", ErrorCode.none)
    unknown = uuid.uuid4()
    missing = await client.request(METADATA, 12, {"topics": [{"topic_id": unknown, "name": None}]})
    assert missing.topics[0].error_code is ErrorCode.unknown_topic_id


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_find_coordinator_single_key(
    node: RunningServer, client: WireClient, version: int
) -> None:
    response = await client.request(FIND_COORDINATOR, version, {"key": "g1", "key_type": 0})
    assert response.error_code is ErrorCode.none
    assert (response.node_id, response.host, response.port) == (1, node.host, node.port)


@pytest.mark.parametrize("version", [4, 6])
async def test_find_coordinator_batched_keys(
    node: RunningServer, client: WireClient, version: int
) -> None:
    response = await client.request(
        FIND_COORDINATOR, version, {"key_type": 0, "coordinator_keys": ["g1", "g2"]}
    )
    assert [(c.key, c.node_id, c.port, c.error_code) for c in response.coordinators] == [
        ("g1", 1, node.port, ErrorCode.none),
        ("g2", 1, node.port, ErrorCode.none),
    ]


@pytest.mark.parametrize(
    ("version", "key_type", "code"),
    [
        (3, 1, ErrorCode.coordinator_not_available),
        (5, 2, ErrorCode.invalid_request),
        (6, 2, ErrorCode.coordinator_not_available),
        (6, 7, ErrorCode.invalid_request),
    ],
)
async def test_find_coordinator_other_key_types(
    client: WireClient, version: int, key_type: int, code: ErrorCode
) -> None:
    values = {"key": "k", "key_type": key_type, "coordinator_keys": ["k"]}
    response = await client.request(FIND_COORDINATOR, version, values)
    entry = response.coordinators[0] if version >= 4 else response
    assert (entry.error_code, entry.node_id, entry.port) == (code, -1, -1)


async def test_produce_then_fetch_every_record(client: WireClient) -> None:
    first = await produce(client, 0, b"a", b"b")
    second = await produce(client, 0, b"c", version=3)
    assert (first.error_code, first.base_offset) == (ErrorCode.none, 0)
    assert second.base_offset == 2
    for version in (4, 11, 12):
        response = await client.request(FETCH, version, fetch_request(0))
        data = response.responses[0].partitions[0]
        assert (data.high_watermark, data.last_stable_offset) == (3, 3)
        assert [(r.offset, r.value) for r in read_records(data.records)] == [
            (0, b"a"), (1, b"b"), (2, b"c"),
        ]  # fmt: skip


@pytest.mark.parametrize("version", [13, 16, 18])
async def test_fetch_by_topic_id_echoes_it(
    node: RunningServer, client: WireClient, version: int
) -> None:
    await produce(client, 1, b"x")
    request = fetch_request(0, partition=1)
    request["topics"][0]["topic_id"] = t1_id(node)
    response = await client.request(FETCH, version, request)
    topic = response.responses[0]
    assert topic.topic_id == t1_id(node)
    assert [r.value for r in read_records(topic.partitions[0].records)] == [b"x"]
    request["topics"][0]["topic_id"] = uuid.uuid4()
    unknown = await client.request(FETCH, version, request)
    assert unknown.responses[0].partitions[0].error_code is ErrorCode.unknown_topic_id


async def test_fetch_errors(client: WireClient) -> None:
    beyond = await client.request(FETCH, 12, fetch_request(5))
    assert beyond.responses[0].partitions[0].error_code is ErrorCode.offset_out_of_range
    request = fetch_request(0, partition=9)
    missing = await client.request(FETCH, 12, request)
    assert missing.responses[0].partitions[0].error_code is ErrorCode.unknown_topic_or_partition
    session = await client.request(FETCH, 12, {**fetch_request(0), "session_id": 77})
    assert session.error_code is ErrorCode.fetch_session_id_not_found


async def test_empty_fetch_waits_max_wait_then_answers(client: WireClient) -> None:
    started = time.monotonic()
    response = await client.request(FETCH, 11, fetch_request(0, max_wait=300))
    assert time.monotonic() - started >= 0.28
    assert response.responses[0].partitions[0].records in (b"", None)


async def test_long_poll_wakes_when_data_arrives(node: RunningServer, client: WireClient) -> None:
    producer = await WireClient.connect(node.host, node.port)
    waiting = asyncio.create_task(client.request(FETCH, 11, fetch_request(0, max_wait=30_000)))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    await produce(producer, 0, b"wake")
    response = await asyncio.wait_for(waiting, timeout=5)
    assert [r.value for r in read_records(response.responses[0].partitions[0].records)] == [b"wake"]
    await producer.close()


async def test_produce_rejects_corrupt_batches_and_unknown_partitions(client: WireClient) -> None:
    batch = bytearray(record_batch([b"a"]))
    batch[-1] ^= 0xFF
    response = await client.request(
        PRODUCE,
        9,
        {
            "acks": 1,
            "timeout": 1000,
            "topic_data": [
                {"name": "t1", "partition_data": [{"index": 0, "records": bytes(batch)}]},
                {"name": "nope", "partition_data": [{"index": 0, "records": record_batch([b"a"])}]},
            ],
        },
    )
    corrupt, unknown = (t.partition_responses[0] for t in response.responses)
    assert corrupt.error_code is ErrorCode.corrupt_message
    assert "CRC" in corrupt.error_message
    assert unknown.error_code is ErrorCode.unknown_topic_or_partition
    offsets = await client.request(
        LIST_OFFSETS,
        3,
        {
            "replica_id": -1,
            "topics": [{"name": "t1", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    assert offsets.topics[0].partitions[0].offset == 0  # nothing of the corrupt batch stored


async def test_produce_with_acks_zero_sends_no_response(client: WireClient) -> None:
    request = {
        "acks": 0,
        "timeout": 1000,
        "topic_data": [
            {"name": "t1", "partition_data": [{"index": 2, "records": record_batch([b"q"])}]}
        ],
    }
    await client.send(client.encode(PRODUCE, 9, request))
    # The next response on the connection is the Fetch's; it long-polls until the data is durable.
    response = await client.request(FETCH, 12, fetch_request(0, partition=2, max_wait=5000))
    assert [r.value for r in read_records(response.responses[0].partitions[0].records)] == [b"q"]


@pytest.mark.parametrize("version", [1, 3, 7, 11])
async def test_list_offsets_earliest_latest_and_timestamp(client: WireClient, version: int) -> None:
    await produce(client, 0, b"a", b"b")

    async def lookup(timestamp: int) -> Any:
        response = await client.request(
            LIST_OFFSETS,
            version,
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {"name": "t1", "partitions": [{"partition_index": 0, "timestamp": timestamp}]}
                ],
            },
        )
        return response.topics[0].partitions[0]

    assert (await lookup(-2)).offset == 0
    assert (await lookup(-1)).offset == 2
    assert (await lookup(0)).offset == 0  # record_batch() stamps 2023-11-14
    assert (await lookup(4_000_000_000_000)).offset == -1


async def test_init_producer_id_hands_out_distinct_ids(
    node: RunningServer, client: WireClient
) -> None:
    first = await client.request(
        INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout": 1}
    )
    second = await client.request(
        INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout": 1}
    )
    assert first.producer_id != second.producer_id
    assert first.producer_epoch == 0
    bumped = await client.request(
        INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": None,
            "transaction_timeout": 1,
            "producer_id": first.producer_id,
            "producer_epoch": 0,
        },
    )
    assert (bumped.producer_id, bumped.producer_epoch) == (first.producer_id, 1)
    transactional = await client.request(
        INIT_PRODUCER_ID, 4, {"transactional_id": "tx", "transaction_timeout": 1}
    )
    assert transactional.error_code is ErrorCode.coordinator_not_available


async def test_fetch_max_bytes_lets_only_the_first_partition_exceed_it(client: WireClient) -> None:
    await produce(client, 0, b"x" * 100)
    await produce(client, 1, b"y" * 100)
    request = fetch_request(0)
    request["max_bytes"] = 1
    request["topics"][0]["partitions"].append(
        {"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    )
    response = await client.request(FETCH, 12, request)
    first, second = response.responses[0].partitions
    assert [r.value for r in read_records(first.records)] == [b"x" * 100]
    assert (second.error_code, second.high_watermark, second.records) == (ErrorCode.none, 1, b"")


async def test_produce_v13_addresses_topics_by_id(node: RunningServer, client: WireClient) -> None:
    def request(topic_id: uuid.UUID) -> dict[str, Any]:
        data = {"index": 0, "records": record_batch([b"by-id"])}
        return {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [{"topic_id": topic_id, "partition_data": [data]}],
        }

    stored = await client.request(PRODUCE, 13, request(t1_id(node)))
    assert stored.responses[0].topic_id == t1_id(node)
    assert stored.responses[0].partition_responses[0].error_code is ErrorCode.none
    unknown = await client.request(PRODUCE, 13, request(uuid.uuid4()))
    assert unknown.responses[0].partition_responses[0].error_code is ErrorCode.unknown_topic_id
