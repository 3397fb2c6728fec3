"""The cluster admin APIs (DescribeTopicPartitions, DescribeLogDirs, AlterReplicaLogDirs,
ElectLeaders, Alter/ListPartitionReassignments, ListConfigResources) answered as Kafka 4.4's
single broker answers them: each request goes to the real broker and to this node, both holding
topics `adm-a` (3 partitions) and `adm-b` (2), and the answers must match, field by field, once
what cannot match (topic ids, log dir paths, disk sizes, other tests' topics) is set aside."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from coordinator.testing.peers.kafka_broker import KafkaBroker
from coordinator.testing.server import RunningServer, WireClient, record_batch

PRODUCE, CREATE_TOPICS, ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS, ELECT_LEADERS = 0, 19, 34, 35, 43
ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 45, 46
LIST_CONFIG_RESOURCES, DESCRIBE_TOPIC_PARTITIONS = 74, 75
TOPICS = {"adm-a": 3, "adm-b": 2}

pytestmark = pytest.mark.node(topics=list(TOPICS.items()))


def plain(value: Any) -> Any:
    """A kio answer as dicts, lists and ints; a topic id as whether there is one."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, uuid.UUID):
        return "an id" if value.int else None
    if isinstance(value, enum.IntEnum):
        return int(value)
    return value


@pytest.fixture
async def kafka(kafka_broker: KafkaBroker) -> AsyncIterator[WireClient]:
    host, port = kafka_broker.bootstrap.rsplit(":", 1)
    client = await WireClient.connect(host, int(port))
    # TOPIC_ALREADY_EXISTS when an earlier test made them: the same topics
    await client.request(CREATE_TOPICS, 7, {
        "topics": [
            {"name": name, "num_partitions": count, "replication_factor": 1,
             "assignments": [], "configs": []}
            for name, count in TOPICS.items()
        ],
        "timeout": timedelta(seconds=10), "validate_only": False,
    })  # fmt: skip
    yield client
    await client.close()


async def same_answer(
    kafka: WireClient, client: WireClient, api_key: int, version: int, body: dict[str, Any]
) -> Any:
    """Ask both; assert the answers match; return ours."""
    theirs = plain(await kafka.request(api_key, version, body))
    ours = plain(await client.request(api_key, version, body))
    assert ours == theirs, body
    return ours


def topics(*names: str) -> list[dict[str, str]]:
    return [{"name": name} for name in names]


def cursor(topic: str, partition: int) -> dict[str, Any]:
    return {"topic_name": topic, "partition_index": partition}


PAGES: dict[str, dict[str, Any]] = {
    "named, in name order": {"topics": topics("adm-b", "adm-a", "adm-none")},
    "an invalid name": {"topics": topics("adm-a", "bad name!")},
    "a page ends inside a topic": {"topics": topics("adm-a", "adm-b"), "limit": 2},
    "a page ends with a topic": {"topics": topics("adm-a", "adm-b"), "limit": 3},
    "a page holds at least one partition": {"topics": topics("adm-a"), "limit": 0},
    "from a cursor": {
        "topics": topics("adm-a", "adm-b"), "limit": 2,
        "cursor": cursor("adm-a", 2),
    },
    "a cursor past the topic's partitions": {
        "topics": topics("adm-a", "adm-b"), "cursor": cursor("adm-a", 7),
    },
    "a cursor on a topic not asked for": {"topics": topics("adm-a"), "cursor": cursor("adm-b", 0)},
    "a negative cursor": {"topics": topics("adm-a", "adm-b"), "cursor": cursor("adm-a", -1)},
}  # fmt: skip


@pytest.mark.parametrize("asked", PAGES.values(), ids=PAGES.keys())
async def test_describe_topic_partitions(
    kafka: WireClient, client: WireClient, asked: dict[str, Any]
) -> None:
    limit = asked.get("limit", 2000)
    body = {"topics": asked["topics"], "response_partition_limit": limit,
            "cursor": asked.get("cursor")}  # fmt: skip
    await same_answer(kafka, client, DESCRIBE_TOPIC_PARTITIONS, 0, body)


async def test_describe_topic_partitions_of_every_topic_pages_through_all_of_them(
    node: RunningServer, client: WireClient
) -> None:
    """Kafka's own topics differ from ours (it has no `__consumer_offsets` before a group), so
    the listing of all topics is checked for what Kafka promises: every topic, in name order,
    each partition once, across pages of two."""
    seen: list[tuple[str, int]] = []
    next_cursor = None
    for _ in range(100):
        answer = await client.request(DESCRIBE_TOPIC_PARTITIONS, 0, {
            "topics": [], "response_partition_limit": 2, "cursor": next_cursor,
        })  # fmt: skip
        seen += [(t.name, p.partition_index) for t in answer.topics for p in t.partitions]
        if answer.next_cursor is None:
            break
        next_cursor = {
            "topic_name": answer.next_cursor.topic_name,
            "partition_index": answer.next_cursor.partition_index,
        }
    internal = node.broker.internal_topics.get("__consumer_offsets")
    assert internal is not None
    expected = [("__consumer_offsets", p) for p in range(internal.partition_count)]
    expected += [(name, p) for name, count in TOPICS.items() for p in range(count)]
    assert seen == expected


def ours_only(answer: Any, field: str, key: str) -> Any:
    """`answer` with only this test's topics in its list `field` (Kafka has topics of the other
    tests; the node has `__consumer_offsets` before any group), entries in name order."""
    kept = [e for e in answer[field] if str(e[key]).startswith("adm-")]
    return {**answer, field: sorted(kept, key=lambda e: e[key])}


def sorted_log_dirs(answer: Any) -> Any:
    """A DescribeLogDirs answer with what differs by machine set aside: the path and disk sizes
    (checked to be there), topic and partition order (Kafka's is its maps')."""
    results = []
    for result in answer["results"]:
        assert result.get("total_bytes", 1) > 0 and result.get("usable_bytes", 1) > 0
        result = {**result, "log_dir": "the data dir", "total_bytes": 0, "usable_bytes": 0}
        for topic in result["topics"]:
            topic["partitions"].sort(key=lambda p: p["partition_index"])
        results.append(ours_only(result, "topics", "name"))
    return {**answer, "results": results}


async def produce(client: WireClient, topic: str, partition: int) -> None:
    answer = await client.request(PRODUCE, 9, {
        "acks": -1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
            {"index": partition, "records": record_batch([b"a", b"bc"])}]}],
    })  # fmt: skip
    assert answer.responses[0].partition_responses[0].error_code == 0


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
async def test_describe_log_dirs(kafka: WireClient, client: WireClient, version: int) -> None:
    if version == 1:  # once per session: Kafka's logs grow with each batch
        await produce(kafka, "adm-b", 1)
        await produce(client, "adm-b", 1)
    else:
        await produce(client, "adm-b", 1)
    for asked in (
        None,
        [{"topic": "adm-a", "partitions": [0, 2, 9]}, {"topic": "adm-none", "partitions": [0]}],
        [{"topic": "adm-b", "partitions": [1]}],
        [],
    ):
        body = {"topics": asked}
        theirs = sorted_log_dirs(plain(await kafka.request(DESCRIBE_LOG_DIRS, version, body)))
        ours = sorted_log_dirs(plain(await client.request(DESCRIBE_LOG_DIRS, version, body)))
        assert ours == theirs, asked


async def test_alter_replica_log_dirs(
    kafka_broker: KafkaBroker, kafka: WireClient, node: RunningServer, client: WireClient
) -> None:
    def asked(own_dir: str) -> dict[str, Any]:
        return {"dirs": [
            {"path": own_dir, "topics": [
                {"name": "adm-a", "partitions": [0, 9]}, {"name": "adm-none", "partitions": [0]}]},
            {"path": "/no/such/dir", "topics": [
                {"name": "adm-a", "partitions": [1]}, {"name": "adm-none", "partitions": [1]}]},
        ]}  # fmt: skip

    def in_order(answer: Any) -> Any:
        for topic in answer["results"]:
            topic["partitions"].sort(key=lambda p: p["partition_index"])
        return {**answer, "results": sorted(answer["results"], key=lambda t: t["topic_name"])}

    for version in (1, 2):
        theirs = await kafka.request(
            ALTER_REPLICA_LOG_DIRS, version, asked(str(kafka_broker.log_dir / "data"))
        )
        ours = await client.request(ALTER_REPLICA_LOG_DIRS, version, asked(str(node.data_dir)))
        assert in_order(plain(ours)) == in_order(plain(theirs))


ELECTIONS: dict[str, dict[str, Any]] = {
    "preferred": {"election_type": 0, "topic_partitions": [
        {"topic": "adm-a", "partitions": [0, 9, 0]}, {"topic": "adm-none", "partitions": [0]},
        {"topic": "adm-b", "partitions": []}]},
    "unclean": {"election_type": 1, "topic_partitions": [{"topic": "adm-b", "partitions": [1]}]},
    "of an unknown type": {"election_type": 5, "topic_partitions": [
        {"topic": "adm-a", "partitions": [0]}]},
    "of no partitions": {"election_type": 0, "topic_partitions": []},
}  # fmt: skip


@pytest.mark.parametrize("asked", ELECTIONS.values(), ids=ELECTIONS.keys())
@pytest.mark.parametrize("version", [0, 1, 2])
async def test_elect_leaders(
    kafka: WireClient, client: WireClient, asked: dict[str, Any], version: int
) -> None:
    if version == 0 and asked["election_type"] != 0:
        return  # v0 has no election type: preferred elections only
    body = {**asked, "timeout": timedelta(seconds=5)}
    await same_answer(kafka, client, ELECT_LEADERS, version, body)


async def test_elect_leaders_of_every_partition(kafka: WireClient, client: WireClient) -> None:
    body = {"election_type": 0, "topic_partitions": None, "timeout": timedelta(seconds=5)}
    theirs = plain(await kafka.request(ELECT_LEADERS, 2, body))
    ours = plain(await client.request(ELECT_LEADERS, 2, body))
    field = "replica_election_results"
    assert ours_only(ours, field, "topic") == ours_only(theirs, field, "topic")
    assert {"topic": "__consumer_offsets", "partition_result": []} in ours[field]


def reassign(topic: str, partition: int, replicas: list[int] | None) -> dict[str, Any]:
    return {"name": topic, "partitions": [{"partition_index": partition, "replicas": replicas}]}


REASSIGNMENTS: dict[str, list[dict[str, Any]]] = {
    "onto the only broker": [reassign("adm-a", 0, [1])],
    "cancelled": [reassign("adm-a", 0, None)],
    "onto an unknown broker": [reassign("adm-a", 1, [1, 7])],
    "a broker twice": [reassign("adm-a", 1, [7, 1, 1])],
    "onto no broker": [reassign("adm-b", 1, [])],
    "unknown partitions": [
        reassign("adm-none", 0, [1]), reassign("adm-a", 9, [1]), reassign("adm-a", -1, [1]),
    ],
}  # fmt: skip


@pytest.mark.parametrize("topics", REASSIGNMENTS.values(), ids=REASSIGNMENTS.keys())
@pytest.mark.parametrize("version", [0, 1])
async def test_alter_partition_reassignments(
    kafka: WireClient, client: WireClient, topics: list[dict[str, Any]], version: int
) -> None:
    body = {"timeout": timedelta(seconds=5), "topics": topics}
    for allow in (True, False) if version else (True,):
        body["allow_replication_factor_change"] = allow
        await same_answer(kafka, client, ALTER_REASSIGNMENTS, version, body)
    listed = {"timeout": timedelta(seconds=5), "topics": None}
    await same_answer(kafka, client, LIST_REASSIGNMENTS, 0, listed)


async def test_list_partition_reassignments(kafka: WireClient, client: WireClient) -> None:
    named = [{"name": "adm-a", "partition_indexes": [0, 9]},
             {"name": "adm-none", "partition_indexes": [0]}]  # fmt: skip
    for topics in (None, named, []):
        body = {"timeout": timedelta(seconds=5), "topics": topics}
        await same_answer(kafka, client, LIST_REASSIGNMENTS, 0, body)


@pytest.mark.parametrize("types", [(), (2, 4), (32, 16, 8), (4, 2, 8), (1,), (2, 99)], ids=str)
async def test_list_config_resources(
    kafka: WireClient, client: WireClient, types: tuple[int, ...]
) -> None:
    body = {"resource_types": types}
    theirs = plain(await kafka.request(LIST_CONFIG_RESOURCES, 1, body))
    ours = plain(await client.request(LIST_CONFIG_RESOURCES, 1, body))

    def comparable(answer: Any) -> Any:
        """Kafka's topics but this test's left out (see `ours_only`), order kept."""
        kept = [
            r for r in answer["config_resources"]
            if r["resource_type"] != 2 or r["resource_name"].startswith("adm-")
        ]  # fmt: skip
        return {**answer, "config_resources": kept}

    assert comparable(ours) == comparable(theirs)
    if ours["error_code"] == 0 and (2 in types or not types):
        assert {"resource_name": "__consumer_offsets", "resource_type": 2} in ours[
            "config_resources"
        ]
    v0_theirs = plain(await kafka.request(LIST_CONFIG_RESOURCES, 0, {}))
    assert plain(await client.request(LIST_CONFIG_RESOURCES, 0, {})) == v0_theirs
