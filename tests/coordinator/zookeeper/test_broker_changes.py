"""Kafka 0.8.2's consumer and the broker registry, on a real ZooKeeper (issue 36): once a
rebalance found no broker, the consumer watches `/brokers/ids` for good (ZkClient's
subscriptions are permanent), and its fetcher reads the registry again after a fetch error, so a
broker that comes back under its id at another address is found without a rebalance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zk_cluster import BACKOFF_MS, eventually, produce, zk_broker

from coordinator.zookeeper.client import ZooKeeper
from coordinator.zookeeper.consumer import ZooKeeperConsumer
from rebalance.zookeeper.config import ZooKeeperConsumerConfig
from rebalance.zookeeper.formats import BrokerRegistration, broker_path


def config(connect: str) -> ZooKeeperConsumerConfig:
    return ZooKeeperConsumerConfig.from_properties({
        "group.id": "g", "zookeeper.connect": connect, "consumer.id": "c1",
        "zookeeper.session.timeout.ms": "1500", "rebalance.backoff.ms": str(BACKOFF_MS),
        "auto.offset.reset": "smallest", "refresh.leader.backoff.ms": "100",
    })  # fmt: skip


def triggers(directory: Path) -> list[str]:
    lines: list[dict[str, Any]] = [
        json.loads(line)
        for p in sorted(directory.glob("*.jsonl"))
        for line in p.read_text().splitlines()
    ]
    return [e["trigger"] for e in lines if e["type"] == "rebalance_started"]


async def test_after_a_broker_less_start_every_broker_change_rebalances(
    zookeeper_connect: str, zk: ZooKeeper, tmp_path: Path
) -> None:
    consumer = ZooKeeperConsumer(config(zookeeper_connect), {"t": 1}, event_log=tmp_path)
    async with consumer:
        assert consumer.assignment == {}  # no broker: nothing, and /brokers/ids is watched
        async with zk_broker(zookeeper_connect, [("t", 2)]):
            await eventually(lambda: set(consumer.assignment) == {("t", 0), ("t", 1)})
            first = len(triggers(tmp_path))
            other = BrokerRegistration(2, "127.0.0.1", 1, timestamp="1").encode()
            await zk.create(broker_path(2), other, ephemeral=True, makepath=True)
            await eventually(lambda: len(triggers(tmp_path)) == first + 1, timeout=10)
            await zk.delete(broker_path(2))
            await eventually(lambda: len(triggers(tmp_path)) == first + 2, timeout=10)
            assert triggers(tmp_path)[first:] == ["brokers_changed", "brokers_changed"]


async def test_a_broker_back_at_another_address_is_found_without_a_rebalance(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    data = tmp_path / "broker"
    got: list[str] = []

    async def consumed(total: int) -> bool:
        batch = await consumer.getmany(timeout_ms=100)
        got.extend(bytes(r.value or b"").decode() for rs in batch.values() for r in rs)
        return len(got) >= total

    async with zk_broker(zookeeper_connect, [("t", 1)], data) as first:
        consumer = ZooKeeperConsumer(config(zookeeper_connect), {"t": 1}, event_log=tmp_path)
        await consumer.start()
        await produce(first, "t", 1, 5)
        await eventually(lambda: consumed(5))
        old_port = first.port
    try:
        async with zk_broker(zookeeper_connect, [("t", 1)], data) as again:
            assert again.port != old_port
            await produce(again, "t", 1, 5, start=5)
            await eventually(lambda: consumed(10), timeout=15)
    finally:
        await consumer.stop()
    assert got == [f"t-{i}" for i in range(10)]
    assert triggers(tmp_path) == ["started"]  # found by the fetcher, not by a rebalance
