"""What the demo's stories share: the group and topic, the records produced, the server's
settings, and the supervision of member processes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Hashable, Mapping, Sequence
from typing import Protocol, TypeVar

GROUP = "demo-billing"
TOPIC = "orders"
PARTITIONS = 12
RECORDS = 1200
SESSION_MS = 6000
Say = Callable[[str], None]
P = TypeVar("P", bound=Hashable)


def partitions_moved(previous: Mapping[P, str], owners: Mapping[P, str]) -> int:
    """How many of `owners`' partitions have another owner than in `previous`, a first owner
    included: what the report counts as moved for the same rebalance (a partition moves when it
    gets a new owner; docs/analytics.md)."""
    return sum(1 for p, owner in owners.items() if previous.get(p) != owner)


async def produce(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for i in range(RECORDS):
            await producer.send(TOPIC, f"order-{i}".encode(), partition=i % PARTITIONS)
        await producer.flush()
    finally:
        await producer.stop()


async def produce_confluent(bootstrap: str) -> None:
    """The records, written with librdkafka (the `consumer` extra's client)."""
    from confluent_kafka import Producer

    def write() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(RECORDS):
            producer.produce(TOPIC, f"order-{i}".encode(), partition=i % PARTITIONS)
        if producer.flush(30) != 0:
            raise RuntimeError("records were left unsent")

    await asyncio.to_thread(write)


class Supervised(Protocol):
    """A member process and the task that reads its reports."""

    process: asyncio.subprocess.Process
    reader: asyncio.Task[None] | None


@contextlib.asynccontextmanager
async def supervised(members: Sequence[Supervised]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        for m in members:
            if m.process.returncode is None:
                m.process.kill()
                await m.process.wait()
            if m.reader is not None:
                m.reader.cancel()


#: The server's settings for the story: sessions short enough to watch one expire.
STORY_CONFIG = {
    "group.initial.rebalance.delay.ms": "1000",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": str(SESSION_MS // 6),
}
