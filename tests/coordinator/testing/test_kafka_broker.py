"""Apache Kafka's broker as the tests start it: the session's `kafka_broker` (TEST_SETTINGS), a
second one with other settings from `kafka_brokers`, and a start that fails with one line."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.testing.peers.kafka_broker import KAFKA_VERSION, KafkaBroker, KafkaUnavailable
from coordinator.testing.peers.pytest_plugin import KafkaBrokers


async def settings_of(broker: KafkaBroker) -> dict[str, str]:
    """The group settings the broker reports (DescribeConfigs)."""
    return (await BrokerUnderTest.connect(broker.bootstrap, {})).settings


async def test_the_session_broker_runs_kafka_with_the_test_settings(
    kafka_broker: KafkaBroker,
) -> None:
    assert KAFKA_VERSION.startswith("4.")
    settings = await settings_of(kafka_broker)
    assert settings["group.initial.rebalance.delay.ms"] == "0"
    assert settings["group.consumer.session.timeout.ms"] == "3000"
    assert settings["offsets.topic.num.partitions"] == "1"
    # It answered ApiVersions after its format step and before it served groups.
    assert kafka_broker.formatted_in_s < kafka_broker.api_versions_in_s
    assert kafka_broker.api_versions_in_s <= kafka_broker.started_in_s


async def test_a_classic_group_forms_on_it(kafka_broker: KafkaBroker) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic("peers-orders", 3, 1)])
    finally:
        await admin.close()
    consumer = AIOKafkaConsumer(
        "peers-orders", bootstrap_servers=kafka_broker.bootstrap, group_id="peers-classic"
    )
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2}
    finally:
        await consumer.stop()


async def test_a_second_broker_has_other_settings(
    kafka_broker: KafkaBroker, kafka_brokers: KafkaBrokers
) -> None:
    other = kafka_brokers.get({"group.max.size": 2})
    assert other.port != kafka_broker.port
    assert kafka_brokers.get({"group.max.size": "2"}) is other  # same settings, same broker
    assert (await settings_of(other))["group.max.size"] == "2"
    assert (await settings_of(kafka_broker))["group.max.size"] == "2147483647"


def test_settings_kafka_refuses_fail_the_start_with_its_reason() -> None:
    with pytest.raises(KafkaUnavailable) as refused:
        KafkaBroker.start({"group.consumer.heartbeat.interval.ms": 20_000}, attempts=1)
    message = str(refused.value)
    assert "\n" not in message
    assert "group.consumer.heartbeat.interval.ms" in message
