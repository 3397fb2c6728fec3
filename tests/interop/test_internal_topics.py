"""Pattern subscriptions of real clients meet `__consumer_offsets` as they meet it on Kafka.

The server lists it with is_internal. aiokafka and kafka-python skip it while
`exclude_internal_topics` is on (their default) and take it when it is off, which shows that
the flag, not the pattern, keeps it out. librdkafka has no such setting: its regex subscriptions
match internal topics on Kafka too (confluentinc/librdkafka#3458), and `topic.blacklist` is how
its users keep `__consumer_offsets` out; both behaviours are checked here."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from coordinator.testing.server import RunningServer, server_in_thread

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
    # kafka-python runs in this process here; under load its close() can leave one of its own
    # sockets to the garbage collector (seen once in a full run), which is not ours to fix.
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]

SETTINGS = ["group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=4"]
ORDERS = {("orders", 0), ("orders", 1)}
OFFSETS = {("__consumer_offsets", p) for p in range(4)}
DEADLINE_S = 40


@pytest.fixture(scope="module")
def node() -> Iterator[RunningServer]:
    with server_in_thread(topics=[("orders", 2)], settings=SETTINGS) as server:
        yield server


def kafka_python_assignment(node: RunningServer, group: str, exclude: bool) -> set[Any]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=node.bootstrap,
        group_id=group,
        exclude_internal_topics=exclude,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    try:
        consumer.subscribe(pattern="^.*")
        deadline = time.monotonic() + DEADLINE_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
        return {(tp.topic, tp.partition) for tp in consumer.assignment()}
    finally:
        consumer.close()


async def _aiokafka_assignment(node: RunningServer, group: str, exclude: bool) -> set[Any]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        bootstrap_servers=node.bootstrap,
        group_id=group,
        exclude_internal_topics=exclude,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=1000,
    )
    consumer.subscribe(pattern="^.*")
    await consumer.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not consumer.assignment() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        return {(tp.topic, tp.partition) for tp in consumer.assignment()}
    finally:
        await consumer.stop()


def aiokafka_assignment(node: RunningServer, group: str, exclude: bool) -> set[Any]:
    return asyncio.run(_aiokafka_assignment(node, group, exclude))


def confluent_assignment(node: RunningServer, group: str, exclude: bool) -> set[Any]:
    from confluent_kafka import Consumer

    config: dict[str, Any] = {
        "bootstrap.servers": node.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if exclude:
        config["topic.blacklist"] = "__consumer_offsets"
    consumer = Consumer(config)
    try:
        consumer.subscribe(["^.*"])
        deadline = time.monotonic() + DEADLINE_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        return {(tp.topic, tp.partition) for tp in consumer.assignment()}
    finally:
        consumer.close()


def assignment(node: RunningServer, library: str, exclude: bool) -> set[Any]:
    group = f"{library}-{'exclude' if exclude else 'include'}"
    if library == "aiokafka":
        return aiokafka_assignment(node, group, exclude)
    if library == "kafka-python":
        return kafka_python_assignment(node, group, exclude)
    return confluent_assignment(node, group, exclude)


@pytest.mark.parametrize("library", ["aiokafka", "kafka-python", "confluent"])
def test_pattern_subscription_skips_the_internal_topic(node: RunningServer, library: str) -> None:
    """aiokafka and kafka-python by default; librdkafka with `topic.blacklist`."""
    assert assignment(node, library, exclude=True) == ORDERS


@pytest.mark.parametrize("library", ["aiokafka", "kafka-python", "confluent"])
def test_without_the_exclusion_the_pattern_takes_it(node: RunningServer, library: str) -> None:
    """`exclude_internal_topics=False`; librdkafka's default (as against Kafka)."""
    assert assignment(node, library, exclude=False) == ORDERS | OFFSETS
