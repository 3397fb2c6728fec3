"""The 0.8 rebalance on a real ZooKeeper, one consumer in this process: registration bytes,
claims that wait for a stale owner, the retry budget, burst collapse, session expiry, topic
growth and topic filters."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_broker_registration import expire_session
from zk_cluster import BACKOFF_MS, eventually, owners, zk_broker

from coordinator.partition_log.partition import PartitionLog
from coordinator.zookeeper.client import ZooKeeper
from coordinator.zookeeper.consumer import ConsumerRebalanceFailed, ZooKeeperConsumer
from rebalance.event_schema import ZooKeeperTrigger, check_event
from rebalance.zookeeper.config import ZooKeeperConsumerConfig
from rebalance.zookeeper.topic_filter import whitelist

GROUP = "g"


def config(connect: str, **extra: str) -> ZooKeeperConsumerConfig:
    return ZooKeeperConsumerConfig.from_properties({
        "group.id": GROUP, "zookeeper.connect": connect, "consumer.id": "c1",
        "zookeeper.session.timeout.ms": "1500", "rebalance.backoff.ms": str(BACKOFF_MS),
        "auto.offset.reset": "smallest", **extra,
    })  # fmt: skip


def events(directory: Path, event_type: str | None = None) -> list[dict[str, Any]]:
    lines = [
        json.loads(line)
        for p in sorted(directory.glob("*.jsonl"))
        for line in p.read_text().splitlines()
    ]
    assert [(e, check_event(e)) for e in lines if check_event(e) is not None] == []
    return [e for e in lines if event_type is None or e["type"] == event_type]


async def test_registration_is_0_8_json_and_ephemeral(
    zookeeper_connect: str, zk: ZooKeeper
) -> None:
    async with zk_broker(zookeeper_connect, [("t", 2)]):
        async with ZooKeeperConsumer(config(zookeeper_connect), {"t": 2}) as consumer:
            assert consumer.consumer_id == "g_c1"
            data, stat = await zk.get("/consumers/g/ids/g_c1")
            assert re.fullmatch(
                rb'\{"version":1,"subscription":\{"t":2\},"pattern":"static","timestamp":"\d{13}"\}',
                data,
            )
            assert stat.ephemeral_owner != 0
            assert await owners(zk, GROUP, "t") == {0: "g_c1-0", 1: "g_c1-1"}
        assert not await zk.exists("/consumers/g/ids/g_c1")
        assert await owners(zk, GROUP, "t") == {}


async def test_a_stale_owner_forces_retries_then_success(
    zookeeper_connect: str, zk: ZooKeeper, tmp_path: Path
) -> None:
    async with zk_broker(zookeeper_connect, [("t", 3)]):
        stale = ZooKeeper(zookeeper_connect)
        await stale.start()
        await stale.create("/consumers/g/owners/t/1", b"g_old-0", ephemeral=True, makepath=True)
        consumer = ZooKeeperConsumer(config(zookeeper_connect), {"t": 1}, event_log=tmp_path)
        starting = asyncio.create_task(consumer.start())
        await eventually(lambda: len(events(tmp_path, "zk_claims_failed")) >= 2)
        await stale.close()  # the previous owner lets go
        await starting
        try:
            assert consumer.assignment == {
                ("t", 0): "g_c1-0",
                ("t", 1): "g_c1-0",
                ("t", 2): "g_c1-0",
            }
            failed = events(tmp_path, "zk_claims_failed")
            assert failed[0]["conflicts"] == [["t", 1]] and failed[0]["rolled_back"] == 2
            retries = events(tmp_path, "zk_rebalance_retry")
            assert [r["attempt"] for r in retries] == list(range(1, len(retries) + 1))
            assert all(r["backoff_ms"] == BACKOFF_MS for r in retries)
            (completed,) = events(tmp_path, "zk_rebalance_completed")
            assert (
                completed["attempt"] == len(retries) + 1 and completed["group_type"] == "zookeeper"
            )
            assert consumer.last_outcome is not None and consumer.last_outcome.attempts > 1
        finally:
            await consumer.stop()


async def test_max_retries_exhausted_is_consumer_rebalance_failed(
    zookeeper_connect: str, zk: ZooKeeper, tmp_path: Path
) -> None:
    async with zk_broker(zookeeper_connect, [("t", 2)]):
        await zk.create("/consumers/g/owners/t/0", b"g_old-0", makepath=True)  # never released
        consumer = ZooKeeperConsumer(
            config(zookeeper_connect, **{"rebalance.max.retries": "3"}),
            {"t": 1},
            event_log=tmp_path,
        )
        with pytest.raises(
            ConsumerRebalanceFailed, match=r"^g_c1 can't rebalance after 3 retries$"
        ):
            await consumer.start()
        assert len(events(tmp_path, "zk_claims_failed")) == 3
        assert len(events(tmp_path, "zk_rebalance_retry")) == 2
        (failed,) = events(tmp_path, "zk_rebalance_failed")
        assert failed["attempt"] == 3 and failed["zk_ops"] > 0
        assert await owners(zk, GROUP, "t") == {0: "g_old-0"}  # its own claims were rolled back
        assert not await zk.exists("/consumers/g/ids/g_c1")


async def test_a_burst_of_watch_events_is_one_rebalance(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    # A session that cannot lapse on a loaded machine: a reconnection would add its own trigger.
    settings = config(zookeeper_connect, **{"zookeeper.session.timeout.ms": "10000"})
    async with (
        zk_broker(zookeeper_connect, [("t", 2)]),
        ZooKeeperConsumer(settings, {"t": 1}, event_log=tmp_path) as c,
    ):
        for _ in range(5):
            c.trigger(ZooKeeperTrigger.CONSUMERS_CHANGED)
        await eventually(lambda: len(events(tmp_path, "zk_rebalance_completed")) >= 2)
        await asyncio.sleep(0.3)
        started = events(tmp_path, "rebalance_started")
        assert [(e["trigger"], e["watch_events"]) for e in started] == [
            ("started", 0), ("consumers_changed", 5)
        ]  # fmt: skip


async def test_session_expiry_registers_again_and_rebalances(
    zookeeper_connect: str, zk: ZooKeeper, tmp_path: Path
) -> None:
    async with (
        zk_broker(zookeeper_connect, [("t", 2)]),
        ZooKeeperConsumer(config(zookeeper_connect), {"t": 1}, event_log=tmp_path) as c,
    ):
        _, before = await zk.get("/consumers/g/ids/g_c1")
        await asyncio.to_thread(expire_session, c._zk)
        await eventually(lambda: len(events(tmp_path, "zk_rebalance_completed")) == 2)
        _, after = await zk.get("/consumers/g/ids/g_c1")
        assert after.ephemeral_owner not in (0, before.ephemeral_owner)
        assert await owners(zk, GROUP, "t") == {0: "g_c1-0", 1: "g_c1-0"}
        assert [e["trigger"] for e in events(tmp_path, "rebalance_started")][
            -1
        ] == "session_expired"
        assert len(events(tmp_path, "zk_session_expired")) == 1


async def test_topic_growth_triggers_a_rebalance(zookeeper_connect: str, zk: ZooKeeper) -> None:
    async with (
        zk_broker(zookeeper_connect, [("t", 2)]) as node,
        ZooKeeperConsumer(config(zookeeper_connect), {"t": 1}) as consumer,
    ):
        assert set(consumer.assignment) == {("t", 0), ("t", 1)}
        topics = node.broker.topics
        topic = topics.get("t")
        assert topic is not None
        topic.partitions.append(PartitionLog(topics.root / "t" / "2.log"))
        topics.changed(topic)  # what CreatePartitions does: the broker rewrites the znode
        await eventually(lambda: set(consumer.assignment) == {("t", 0), ("t", 1), ("t", 2)})
        assert (await owners(zk, GROUP, "t"))[2] == "g_c1-0"


async def test_a_whitelist_follows_new_matching_topics(
    zookeeper_connect: str, zk: ZooKeeper
) -> None:
    async with zk_broker(zookeeper_connect, [("logs-a", 1), ("other", 1)]) as node:
        subscription = whitelist(" 'logs-.*' ")
        async with ZooKeeperConsumer(
            config(zookeeper_connect), subscription, streams=2
        ) as consumer:
            data, _ = await zk.get("/consumers/g/ids/g_c1")
            assert data.startswith(
                b'{"version":1,"subscription":{"logs-.*":2},"pattern":"white_list"'
            )
            assert set(consumer.assignment) == {("logs-a", 0)}
            node.broker.topics.create("logs-b", 2)
            await eventually(
                lambda: set(consumer.assignment) == {("logs-a", 0), ("logs-b", 0), ("logs-b", 1)}
            )
            assert consumer.assignment[("logs-b", 1)] == "g_c1-1"


async def test_zk_offsets_shows_owners_offsets_and_lag(
    zookeeper_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from zk_cluster import produce

    from coordinator.cli.main import main

    async with zk_broker(zookeeper_connect, [("t", 2)]) as node:
        await produce(node, "t", 2, 10)
        async with ZooKeeperConsumer(config(zookeeper_connect), {"t": 1}) as consumer:
            await eventually(lambda: _consume(consumer, 10))
            await consumer.commit()
            await produce(node, "t", 2, 4, start=10)
            await eventually(lambda: _log_end(node, "t", 0) == 7)
            code = await asyncio.to_thread(
                main, ["zk-offsets", GROUP, "--zookeeper", zookeeper_connect]
            )
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "Group           Topic                          Pid Offset          logSize         Lag             Owner",  # noqa: E501
        "g               t                              0   5               7               2               g_c1-0",  # noqa: E501
        "g               t                              1   5               7               2               g_c1-0",  # noqa: E501
    ]  # fmt: skip


_consumed: dict[int, int] = {}


async def _consume(consumer: ZooKeeperConsumer, total: int) -> bool:
    batch = await consumer.getmany(timeout_ms=100)
    _consumed[id(consumer)] = _consumed.get(id(consumer), 0) + sum(len(r) for r in batch.values())
    return _consumed[id(consumer)] >= total


def _log_end(node: Any, topic: str, partition: int) -> int:
    return int(node.broker.topics.get(topic).partition(partition).high_watermark)
