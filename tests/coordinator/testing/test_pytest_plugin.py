"""The pytest plugin, loaded from the installed package's `pytest11` entry point (this module has
no `pytest_plugins` line): `kafka_server`, its `kafka` marker, and `kafka_server_factory`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kio.schema.errors import ErrorCode

from coordinator.groups.apis.common import group_runtime
from coordinator.testing.pytest_plugin import ServerFactory
from coordinator.testing.server import RunningServer, WireClient, server_in_thread
from rebalance.config import CoordinatorConfig


async def topics_of(server: RunningServer) -> list[tuple[str, int]]:
    client = await WireClient.connect(server.host, server.port)
    response = await client.request(3, 13, {"topics": None})
    await client.close()
    assert response.error_code is ErrorCode.none
    return [(t.name, len(t.partitions)) for t in response.topics if not t.is_internal]


def group_config(server: RunningServer) -> CoordinatorConfig:
    return group_runtime(server.broker).core.config


async def test_the_default_server(kafka_server: RunningServer) -> None:
    assert await topics_of(kafka_server) == [("test-topic", 3)]
    assert kafka_server.bootstrap == f"127.0.0.1:{kafka_server.port}"
    assert group_config(kafka_server).group_initial_rebalance_delay_ms == 0


@pytest.mark.kafka(topics=[("orders", 2), ("audit", 1)], settings={"group.max.size": 7})
async def test_the_marker_chooses_topics_and_settings(kafka_server: RunningServer) -> None:
    assert await topics_of(kafka_server) == [("audit", 1), ("orders", 2)]
    config = group_config(kafka_server)
    assert (config.group_max_size, config.group_initial_rebalance_delay_ms) == (7, 0)


@pytest.mark.kafka(topics=["orders", "audit:2"], settings={"num.partitions": 4})
async def test_the_marker_takes_bare_names_and_name_colon_partitions(
    kafka_server: RunningServer,
) -> None:
    assert await topics_of(kafka_server) == [("audit", 2), ("orders", 4)]  # bare: num.partitions


@pytest.mark.parametrize("topics", [["orders:0"], [("orders",)], [3]])
def test_a_wrong_topic_says_what_is_expected(
    kafka_server_factory: ServerFactory, topics: list[object]
) -> None:
    with pytest.raises(pytest.UsageError) as caught:
        kafka_server_factory(topics=topics)
    assert str(caught.value) == (
        'kafka_server: topics: each is "name", "name:partitions" or (name, partitions) with '
        f"partitions >= 1; got {topics[0]!r}"
    )


def test_server_in_thread_takes_the_fixtures_settings_and_defaults() -> None:
    """One convention: a dict (or KEY=VALUE strings) over the same test defaults."""
    with server_in_thread(settings={"group.max.size": 5, "auto.create.topics.enable": False}) as a:
        config = group_config(a)
        assert (config.group_max_size, config.group_initial_rebalance_delay_ms) == (5, 0)
        assert a.broker.config.auto_create_topics_enable is False
    with server_in_thread(settings=["group.initial.rebalance.delay.ms=50"]) as b:
        assert group_config(b).group_initial_rebalance_delay_ms == 50


async def test_the_factory_starts_several(kafka_server_factory: ServerFactory) -> None:
    first = kafka_server_factory(topics=[("a", 1)])
    second = kafka_server_factory(settings={"group.initial.rebalance.delay.ms": 100})
    assert first.port != second.port
    assert await topics_of(first) == [("a", 1)]
    assert group_config(second).group_initial_rebalance_delay_ms == 100


@pytest.mark.interop
@pytest.mark.kafka(topics=[("orders", 3)])
async def test_aiokafka_on_the_tests_loop(kafka_server: RunningServer) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka_server.bootstrap)
    await producer.start()
    await producer.send_and_wait("orders", b"hello", partition=1)
    await producer.stop()
    consumer = AIOKafkaConsumer(
        "orders", bootstrap_servers=kafka_server.bootstrap, group_id="g",
        auto_offset_reset="earliest",
    )  # fmt: skip
    await consumer.start()
    try:
        record = await consumer.getone()
    finally:
        await consumer.stop()
    assert (record.partition, record.value) == (1, b"hello")


@pytest.mark.interop
@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")
@pytest.mark.kafka(topics=[("orders", 2)])
def test_a_synchronous_client(kafka_server: RunningServer) -> None:
    from kafka import KafkaConsumer  # kafka-python: a synchronous client

    consumer = KafkaConsumer(bootstrap_servers=kafka_server.bootstrap, group_id="sync")
    # kafka-python's leader can assign before it knows the topic's partitions ("No partition
    # metadata") and then waits for its next metadata refresh: learn them before joining.
    consumer.partitions_for_topic("orders")
    consumer.subscribe(["orders"])
    try:
        for _ in range(100):
            consumer.poll(timeout_ms=100)
            if consumer.assignment():
                break
        assert {tp.partition for tp in consumer.assignment()} == {0, 1}
    finally:
        consumer.close()


WITHOUT_PYTEST_ASYNCIO = """
import pytest

@pytest.mark.kafka(topics=[("t", 1)], settings={"group.max.size": 3})
def test_sync(kafka_server):
    assert kafka_server.bootstrap.startswith("127.0.0.1:")
"""


OLD_STYLE = """
pytest_plugins = ["coordinator.testing.pytest_plugin"]  # what the README used to ask for: harmless


def test_old_style(kafka_server):
    assert kafka_server.port > 0
"""


def test_the_fixture_needs_no_pytest_asyncio_and_no_plugins_line(tmp_path: Path) -> None:
    (tmp_path / "test_it.py").write_text(WITHOUT_PYTEST_ASYNCIO)
    (tmp_path / "test_old_style.py").write_text(OLD_STYLE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:asyncio", "-p", "no:cacheprovider",
         "-W", "error", "test_it.py", "test_old_style.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
