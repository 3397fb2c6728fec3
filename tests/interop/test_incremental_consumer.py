"""aiokafka consumers fetching what a GroupMember owns (coordinator.clients.member.aiokafka):
records are consumed once across a cooperative rebalance and a KIP-848 one, with commits fenced by
the member's generation or epoch."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from coordinator.clients.member.aiokafka import IncrementalConsumer
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import running_server
from rebalance.config import CoordinatorConfig

pytestmark = [pytest.mark.interop]

TOPIC = "events"
PARTITIONS = 6
CONFIG = CoordinatorConfig.from_properties(
    {
        "group.initial.rebalance.delay.ms": "100",
        "group.min.session.timeout.ms": "500",
        "group.consumer.min.session.timeout.ms": "500",
        "group.consumer.session.timeout.ms": "3000",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "200",
    }
)


async def produce(bootstrap: str, values: list[str]) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for n, value in enumerate(values):
            await producer.send_and_wait(TOPIC, value.encode(), partition=n % PARTITIONS)
    finally:
        await producer.stop()


def incremental(bootstrap: str, name: str, protocol: str) -> IncrementalConsumer:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    return IncrementalConsumer(
        consumer, bootstrap, "incremental", [TOPIC], group_protocol=protocol,
        session_timeout_ms=3000, client_id=name,
        heartbeat_interval_ms=None if protocol == "consumer" else 200,
    )  # fmt: skip


async def consume(c: IncrementalConsumer, seen: list[tuple[str, str]], name: str) -> None:
    while True:
        batch = await c.getmany(timeout_ms=100)
        for records in batch.values():
            seen.extend((name, r.value.decode()) for r in records)
        if batch:
            await c.commit()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_records_are_consumed_once_across_an_incremental_rebalance(protocol: str) -> None:
    first = [f"a{n}" for n in range(60)]
    second = [f"b{n}" for n in range(60)]
    seen: list[tuple[str, str]] = []
    async with running_server(
        topics=[(TOPIC, PARTITIONS)], groups=GroupCoordinatorExtension(CONFIG)
    ) as server:
        await produce(server.bootstrap, first)
        tasks: list[asyncio.Task[Any]] = []
        consumers = [incremental(server.bootstrap, n, protocol) for n in ("x", "y")]
        try:
            for c, name in zip(consumers, ("x", "y"), strict=True):
                await c.__aenter__()
                tasks.append(asyncio.create_task(consume(c, seen, name)))
            await until(lambda: len(seen) >= len(first))
            late = incremental(server.bootstrap, "z", protocol)
            await late.__aenter__()
            consumers.append(late)
            tasks.append(asyncio.create_task(consume(late, seen, "z")))
            await until(lambda: all(c.owned() for c in consumers))
            await produce(server.bootstrap, second)
            await until(lambda: len(seen) >= len(first) + len(second))
            await asyncio.sleep(0.5)  # nothing more arrives (no record read twice)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for c in consumers:
                await c.__aexit__(None, None, None)
    values = [v for _, v in seen]
    assert sorted(values) == sorted(first + second)  # each exactly once
    assert {name for name, v in seen if v.startswith("b")} >= {"z"}  # the late one consumed


async def until(condition: Any, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.05)
