"""Real Kafka clients against the server: produce, then consume with manual assignment.

No consumer group is involved (that needs the group APIs); these tests pin the parts every
client needs first: ApiVersions negotiation, Metadata, InitProducerId (kafka-python's default
idempotent producer), Produce, ListOffsets and Fetch at each client's preferred versions
(aiokafka: Fetch v11; kafka-python: Fetch v12; librdkafka: Metadata v13 with topic ids, then
Fetch v16 by topic id, ListOffsets v7 read_committed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from coordinator.testing.server import RunningServer, read_records, running_server

pytestmark = [
    pytest.mark.interop,
    # kafka-python 3.0 loads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

TOPIC = "interop"
PARTITIONS = 3
COUNT = 60


def expected() -> set[tuple[int, bytes, bytes]]:
    return {(i % PARTITIONS, f"key-{i}".encode(), f"value-{i}".encode()) for i in range(COUNT)}


@pytest.fixture
async def node() -> AsyncIterator[RunningServer]:
    async with running_server(topics=[(TOPIC, PARTITIONS)]) as server:
        yield server


def kafka_python_round_trip(bootstrap: str) -> set[tuple[int, bytes, bytes]]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    futures = [
        producer.send(TOPIC, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=i % 3)
        for i in range(COUNT)
    ]
    producer.flush(timeout=30)
    for future in futures:
        future.get(timeout=30)
    producer.close(timeout=10)

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    received: set[tuple[int, bytes, bytes]] = set()
    deadline = time.monotonic() + 30
    while len(received) < COUNT and time.monotonic() < deadline:
        for messages in consumer.poll(timeout_ms=500).values():
            received.update((m.partition, m.key, m.value) for m in messages)
    consumer.close()
    return received


async def test_kafka_python_producer_and_assigned_consumer(node: RunningServer) -> None:
    received = await asyncio.to_thread(kafka_python_round_trip, node.bootstrap)
    assert received == expected()


async def test_aiokafka_producer_and_assigned_consumer(node: RunningServer) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap, linger_ms=5)
    await producer.start()
    try:
        sent = [
            await producer.send(
                TOPIC, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=i % 3
            )
            for i in range(COUNT)
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        bootstrap_servers=node.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    received: set[tuple[int, bytes, bytes]] = set()
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        async with asyncio.timeout(30):
            while len(received) < COUNT:
                batches = await consumer.getmany(timeout_ms=500)
                for messages in batches.values():
                    received.update((m.partition, m.key, m.value) for m in messages)
    finally:
        await consumer.stop()
    assert received == expected()


async def test_records_from_one_client_reach_the_other(node: RunningServer) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap)
    await producer.start()
    try:
        for i in range(COUNT):
            await producer.send_and_wait(
                TOPIC, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=i % 3
            )
    finally:
        await producer.stop()

    def consume() -> set[tuple[int, bytes, bytes]]:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(
            bootstrap_servers=node.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        received: set[tuple[int, bytes, bytes]] = set()
        deadline = time.monotonic() + 30
        while len(received) < COUNT and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=500).values():
                received.update((m.partition, m.key, m.value) for m in messages)
        consumer.close()
        return received

    assert await asyncio.to_thread(consume) == expected()


def librdkafka_round_trip(bootstrap: str, idempotent: bool) -> set[tuple[int, bytes, bytes]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": idempotent})
    for i in range(COUNT):
        producer.produce(
            TOPIC, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=i % 3
        )
    assert producer.flush(30) == 0, "records left unsent"

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "never-joined",  # required by the client; assign() does not join
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    received: set[tuple[int, bytes, bytes]] = set()
    deadline = time.monotonic() + 30
    while len(received) < COUNT and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        received.add((message.partition(), message.key(), message.value()))
    consumer.close()
    return received


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
async def test_librdkafka_producer_and_assigned_consumer(
    node: RunningServer, idempotent: bool
) -> None:
    received = await asyncio.to_thread(librdkafka_round_trip, node.bootstrap, idempotent)
    assert received == expected()


async def test_kafka_python_infers_a_modern_broker(node: RunningServer) -> None:
    """kafka-python derives a broker version from ApiVersions and acts like an old client
    (30 s session timeout, no static membership) if the advertised ranges look old."""

    def inferred_version() -> tuple[int, ...]:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(bootstrap_servers=node.bootstrap)
        version: tuple[int, ...] = consumer.config["api_version"]
        consumer.close()
        return version

    assert await asyncio.to_thread(inferred_version) >= (3, 9)


async def test_aiokafka_consumer_starting_inside_a_batch(node: RunningServer) -> None:
    """Fetch serves whole batches; the client drops the records before its position."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap, linger_ms=50)
    await producer.start()
    try:
        batch = producer.create_batch()
        for i in range(10):
            batch.append(key=None, value=f"in-batch-{i}".encode(), timestamp=None)
        batch.close()
        await (await producer.send_batch(batch, TOPIC, partition=0))
    finally:
        await producer.stop()
    log = node.broker.topics.get(TOPIC)
    assert log is not None and log.partitions[0].high_watermark == 10
    assert len(read_records(log.partitions[0].read(0, max_bytes=1))) == 10  # a single batch

    consumer = AIOKafkaConsumer(bootstrap_servers=node.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partition = TopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek(partition, 7)
        received: list[tuple[int, bytes]] = []
        async with asyncio.timeout(30):
            while len(received) < 3:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    received.extend((m.offset, m.value) for m in messages)
    finally:
        await consumer.stop()
    assert received == [(i, f"in-batch-{i}".encode()) for i in (7, 8, 9)]
