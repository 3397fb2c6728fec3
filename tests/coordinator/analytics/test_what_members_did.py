"""Eager or cooperative is what the members did, not the protocol's name: real clients on a real
server, its event log read by the report's pipeline.

aiokafka with our `cooperative-sticky` plug-in revokes everything before each JoinGroup (it has
no cooperative protocol), so its members say they own nothing when they join: the report draws
that group as eager (every member waits, nothing kept through a rebalance) although its protocol
is called cooperative-sticky. `GroupMember` and librdkafka (confluent-kafka's cooperative-sticky)
rebalance incrementally (KIP-429): their members join saying what they own and keep it, and
those groups are drawn as cooperative.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer
from pyspark.sql import SparkSession

from assignors.aiokafka import assignor
from coordinator.analytics.pipeline import run_pipeline
from coordinator.analytics.protocols import COOPERATIVE
from coordinator.clients.member.group_member import GroupMember
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import running_server

pytestmark = pytest.mark.spark

EAGER_GROUP = "aiokafka-cooperative-sticky"
COOPERATIVE_GROUP = "group-member-cooperative"
LIBRDKAFKA_GROUP = "librdkafka-cooperative-sticky"
FAST = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 100}


async def until(
    condition: Callable[[], bool], step: Callable[[], Awaitable[object]] | None = None
) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "the group did not settle in 20 s"
        if step is not None:
            await step()
        await asyncio.sleep(0.05)


def plugin_consumer(bootstrap: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        "t", bootstrap_servers=bootstrap, group_id=EAGER_GROUP,
        partition_assignment_strategy=(assignor("cooperative-sticky"),), **FAST,
    )  # fmt: skip


async def aiokafka_joins_and_leaves(bootstrap: str) -> None:
    """A alone holds the four partitions; B joins (2 each); B leaves (A holds four again)."""
    a = plugin_consumer(bootstrap)
    await a.start()
    try:
        await until(lambda: len(a.assignment()) == 4, lambda: a.getmany(timeout_ms=50))
        b = plugin_consumer(bootstrap)
        await b.start()
        try:

            async def poll_both() -> None:
                await asyncio.gather(a.getmany(timeout_ms=50), b.getmany(timeout_ms=50))

            await until(lambda: len(a.assignment()) == len(b.assignment()) == 2, poll_both)
        finally:
            await b.stop()
        await until(lambda: len(a.assignment()) == 4, lambda: a.getmany(timeout_ms=50))
    finally:
        await a.stop()


async def group_members_join_and_leave(bootstrap: str) -> None:
    """The same story with `GroupMember`s (cooperative-sticky, incremental)."""
    async with GroupMember(bootstrap, COOPERATIVE_GROUP, ["t"], **FAST) as a:
        await until(lambda: len(a.owned()) == 4)
        async with GroupMember(bootstrap, COOPERATIVE_GROUP, ["t"], **FAST) as b:
            await until(lambda: len(a.owned()) == len(b.owned()) == 2)
        await until(lambda: len(a.owned()) == 4)


class LibrdkafkaMember:
    """A confluent-kafka consumer polling on a thread of its own; `held` is its assignment."""

    def __init__(self, bootstrap: str) -> None:
        self.held: frozenset[tuple[str, int]] = frozenset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(bootstrap,))
        self._thread.start()

    def _run(self, bootstrap: str) -> None:
        consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": LIBRDKAFKA_GROUP,
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 3000, "heartbeat.interval.ms": 100,
        })  # fmt: skip
        consumer.subscribe(["t"])
        while not self._stop.is_set():
            consumer.poll(0.05)
            self.held = frozenset((tp.topic, tp.partition) for tp in consumer.assignment())
        consumer.close()

    async def close(self) -> None:
        self._stop.set()
        await asyncio.to_thread(self._thread.join)


async def librdkafka_joins_and_leaves(bootstrap: str) -> None:
    """The same story with librdkafka consumers."""
    a = LibrdkafkaMember(bootstrap)
    try:
        await until(lambda: len(a.held) == 4)
        b = LibrdkafkaMember(bootstrap)
        try:
            await until(lambda: len(a.held) == len(b.held) == 2)
        finally:
            await b.close()
        await until(lambda: len(a.held) == 4)
    finally:
        await a.close()


async def test_the_report_draws_what_the_members_did(spark: SparkSession, tmp_path: Path) -> None:
    events = tmp_path / "events"
    extension = GroupCoordinatorExtension(event_log_dir=events)
    # The members' short sessions, and no wait for more members before a group's first round.
    settings = {"group.min.session.timeout.ms": 1000, "group.initial.rebalance.delay.ms": 0}
    async with running_server(topics=[("t", 4)], settings=settings, groups=extension) as server:
        await aiokafka_joins_and_leaves(server.bootstrap)
        await group_members_join_and_leave(server.bootstrap)
        await librdkafka_joins_and_leaves(server.bootstrap)

    out = tmp_path / "tables"
    run_pipeline(spark, str(events), str(out), None, show_progress=False)
    episodes = spark.read.parquet(str(out / "episodes")).collect()
    eager = [e for e in episodes if e["group"] == EAGER_GROUP]
    joined = [e for e in episodes if e["generation"] is not None]
    assert {e["protocol"] for e in joined} == {"cooperative-sticky"}

    # aiokafka's members said they owned nothing at every join: eager, though named cooperative.
    assert [e["cooperative"] for e in eager] == [False] * len(eager) and len(eager) >= 3
    said = [e["owned"] for e in eager if e["generation"] is not None]
    assert said and all(entries == [] for owned in said for entries in owned.values())
    # The member that held partitions waited from the start of the rebalance B's join began.
    two = [e for e in eager if e["outcome"] == "completed" and e["members_after_count"] == 2]
    assert two and all(min(e["stop_the_world_ms"].values()) > 0 for e in two)

    # GroupMember's and librdkafka's members joined saying what they owned, and kept it.
    for group in (COOPERATIVE_GROUP, LIBRDKAFKA_GROUP):
        mine = [e for e in episodes if e["group"] == group]
        assert any(e["cooperative"] for e in mine), group
        kept_through = [e for e in mine if e["cooperative"] and e["outcome"] == "completed"]
        assert any(0 in e["stop_the_world_ms"].values() for e in kept_through), group

    ownership = spark.read.parquet(str(out / "ownership")).collect()
    kept = {r["group"] for r in ownership if r["kept"]}
    # No "keeps them through a rebalance" bar for aiokafka's group.
    assert kept == {COOPERATIVE_GROUP, LIBRDKAFKA_GROUP}

    rows = {r["group_type"]: r for r in spark.read.parquet(str(out / "protocols")).collect()}
    assert set(rows) == {"classic", COOPERATIVE}
    assert (rows["classic"]["groups"], rows[COOPERATIVE]["groups"]) == (1, 2)
    assert rows["classic"]["member_seconds_without_partitions"] > 0
