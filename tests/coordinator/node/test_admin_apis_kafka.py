"""The cluster admin APIs answered as Kafka 4.4's single broker answers them: each request goes
to the real broker and to this node, both holding topics `adm-a` (3 partitions) and `adm-b` (2),
and the answers must match, field by field, once what cannot match (topic ids, log dir paths,
disk sizes, clocks) is set aside."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from coordinator.testing.peers.kafka_broker import KafkaBroker
from coordinator.testing.server import RunningServer, WireClient

CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS = 19, 75
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
