"""The aiokafka assignor plug-in given the way aiokafka's own assignors are: as a class.

aiokafka's convention is `partition_assignment_strategy=(RoundRobinPartitionAssignor,)`; ours
keeps state per consumer, so only an instance works, and the class is refused by `start()` with
a line that says what to pass (instead of a TypeError about `metadata()` deep in aiokafka's
coordinator, and a consumer that never joins).
"""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError

from assignors.aiokafka import AiokafkaAssignor, assignor
from coordinator.testing.server import running_server


async def test_start_refuses_the_plugin_class_and_says_to_pass_an_instance() -> None:
    async with running_server(topics=[("t", 2)]) as server:
        consumer = AIOKafkaConsumer(
            "t", bootstrap_servers=server.bootstrap, group_id="plugin-class",
            partition_assignment_strategy=(AiokafkaAssignor,),
        )  # fmt: skip
        try:
            with pytest.raises(KafkaError, match=r"pass an instance, assignors\.aiokafka"):
                await consumer.start()
        finally:
            coordination = consumer._coordinator._coordination_task
            await consumer.stop()
        # the failed coordination task's error, retrieved (aiokafka leaves it to the collector)
        assert "pass an instance" in str(coordination.exception())


async def test_an_instance_joins_and_is_assigned_everything() -> None:
    async with running_server(topics=[("t", 2)]) as server:
        consumer = AIOKafkaConsumer(
            "t", bootstrap_servers=server.bootstrap, group_id="plugin-instance",
            partition_assignment_strategy=(assignor("sticky"),),
        )  # fmt: skip
        await consumer.start()
        try:
            await consumer.getmany(timeout_ms=2000)
            assert {(tp.topic, tp.partition) for tp in consumer.assignment()} == {
                ("t", 0), ("t", 1),
            }  # fmt: skip
        finally:
            await consumer.stop()
