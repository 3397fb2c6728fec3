"""The topic admin APIs driven by the three real admin clients, unmodified: aiokafka's
`AIOKafkaAdminClient`, kafka-python's `KafkaAdminClient` and confluent-kafka's `AdminClient`.

For each library: create a topic with configs (and be refused a second time), describe the
topic's and the broker's configs, change a topic config, grow the topic under a live consumer
group (a consumer process of the same library) that then rebalances onto the new partitions,
delete records and see the log start move (a new group starts there; a consumer below it is
reset to it), delete the topic. Then the group test as users write it, per library: create the
topic with the admin client, start consumers, produce, consume, commit, delete the topic, and
the group's committed offsets for it are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import RunningServer, running_server
from rebalance.config import CoordinatorConfig

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

LIBRARIES = ["aiokafka", "kafka-python", "confluent"]
PROC = Path(__file__).with_name("consumer_proc.py")
# The initial delay lets a consumer learn its topic's partitions before the first generation:
# kafka-python 3.0 can lose the assignment of a second generation that follows at once (a
# metadata-triggered rejoin still in flight when its poll times out: consumer_proc.py).
GROUP_CONFIG = CoordinatorConfig.from_properties(
    {"group.initial.rebalance.delay.ms": "300", "group.min.session.timeout.ms": "1000"}
)


@contextlib.asynccontextmanager
async def node() -> AsyncIterator[RunningServer]:
    async with running_server(
        groups=GroupCoordinatorExtension(GROUP_CONFIG),
        settings=["auto.create.topics.enable=false", "offsets.topic.replication.factor=1"],
    ) as server:
        yield server


async def eventually(condition: Callable[[], bool], what: str, timeout: float = 45) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.1)


# ------------------------------------------------------------------------------ admin clients
class AiokafkaAdmin:
    """The admin steps with aiokafka's AIOKafkaAdminClient (responses are raw protocol)."""

    def __init__(self, bootstrap: str) -> None:
        from aiokafka.admin import AIOKafkaAdminClient

        self.admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)

    async def start(self) -> None:
        await self.admin.start()

    async def close(self) -> None:
        await self.admin.close()

    async def create(self, name: str, partitions: int, configs: dict[str, str]) -> int:
        """Creates the topic; returns the error code (0 on success)."""
        from aiokafka.admin import NewTopic

        response = await self.admin.create_topics(
            [NewTopic(name, partitions, 1, topic_configs=configs)]
        )
        return int(response.topic_errors[0][1])

    async def topic_configs(self, name: str) -> dict[str, str]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        (response,) = await self.admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name)]
        )
        (result,) = response.resources
        assert result[0] == 0, result
        return {entry[0]: entry[1] for entry in result[4]}

    async def broker_configs(self, node_id: int) -> dict[str, str]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        (response,) = await self.admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(node_id))]
        )
        return {entry[0]: entry[1] for entry in response.resources[0][4]}

    async def set_config(self, name: str, key: str, value: str) -> None:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        # AlterConfigs replaces every override: keep the others, as users of the legacy API do.
        current = {k: v for k, v in (await self.topic_configs(name)).items()}
        responses = await self.admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name, configs={**current, key: value})]
        )
        assert all(r.resources[0][0] == 0 for r in responses), responses

    async def grow(self, name: str, total: int) -> None:
        from aiokafka.admin import NewPartitions

        response = await self.admin.create_partitions({name: NewPartitions(total)})
        assert response.topic_errors[0][1] == 0, response

    async def delete_records(self, name: str, partition: int, before: int) -> int:
        from aiokafka.admin import RecordsToDelete
        from aiokafka.structs import TopicPartition

        done = await self.admin.delete_records(
            {TopicPartition(name, partition): RecordsToDelete(before)}
        )
        return int(done[TopicPartition(name, partition)])

    async def delete(self, name: str) -> None:
        response = await self.admin.delete_topics([name])
        assert response.topic_error_codes[0][1] == 0, response

    async def topics(self) -> set[str]:
        return set(await self.admin.list_topics())

    async def cluster_id(self) -> str:
        return str((await self.admin.describe_cluster())["cluster_id"])

    async def committed(self, group: str) -> dict[tuple[str, int], int]:
        offsets = await self.admin.list_consumer_group_offsets(group)
        return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


class KafkaPythonAdmin:
    """The admin steps with kafka-python's KafkaAdminClient (blocking: run in a thread)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin: Any = None

    async def start(self) -> None:
        from kafka.admin import KafkaAdminClient

        self.admin = await asyncio.to_thread(KafkaAdminClient, bootstrap_servers=self.bootstrap)

    async def close(self) -> None:
        await asyncio.to_thread(self.admin.close)

    async def create(self, name: str, partitions: int, configs: dict[str, str]) -> int:
        from kafka.errors import KafkaError

        topics = {name: {"num_partitions": partitions, "replication_factor": 1,
                         "configs": configs}}  # fmt: skip
        try:
            await asyncio.to_thread(self.admin.create_topics, topics)
        except KafkaError as exc:
            return int(exc.errno)
        return 0

    async def topic_configs(self, name: str) -> dict[str, str]:
        from kafka.admin import ConfigResource, ConfigResourceType

        described = await asyncio.to_thread(
            self.admin.describe_configs,
            [ConfigResource(ConfigResourceType.TOPIC, name)],
            config_filter="all",
        )
        return {k: v["value"] for k, v in described["topic"][name].items()}

    async def broker_configs(self, node_id: int) -> dict[str, str]:
        from kafka.admin import ConfigResource, ConfigResourceType

        described = await asyncio.to_thread(
            self.admin.describe_configs,
            [ConfigResource(ConfigResourceType.BROKER, str(node_id))],
            config_filter="all",
        )
        return {k: v["value"] for k, v in described["broker"][str(node_id)].items()}

    async def set_config(self, name: str, key: str, value: str) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType

        await asyncio.to_thread(
            self.admin.alter_configs,
            [ConfigResource(ConfigResourceType.TOPIC, name, configs={key: value})],
        )

    async def grow(self, name: str, total: int) -> None:
        from kafka.admin import NewPartitions

        await asyncio.to_thread(self.admin.create_partitions, {name: NewPartitions(total)})

    async def delete_records(self, name: str, partition: int, before: int) -> int:
        from kafka import TopicPartition

        tp = TopicPartition(name, partition)
        done = await asyncio.to_thread(self.admin.delete_records, {tp: before})
        return int(done[tp]["low_watermark"])

    async def delete(self, name: str) -> None:
        await asyncio.to_thread(self.admin.delete_topics, [name])

    async def topics(self) -> set[str]:
        return set(await asyncio.to_thread(self.admin.list_topics))

    async def cluster_id(self) -> str:
        return str((await asyncio.to_thread(self.admin.describe_cluster))["cluster_id"])

    async def committed(self, group: str) -> dict[tuple[str, int], int]:
        listed = await asyncio.to_thread(self.admin.list_group_offsets, {group: None})
        offsets = listed[group]
        return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


class ConfluentAdmin:
    """The admin steps with confluent-kafka's AdminClient (librdkafka; futures)."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    @staticmethod
    async def result(future: Any) -> Any:
        return await asyncio.to_thread(future.result, 30)

    async def create(self, name: str, partitions: int, configs: dict[str, str]) -> int:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        futures = self.admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1, config=configs)]
        )
        try:
            await self.result(futures[name])
        except KafkaException as exc:
            return int(exc.args[0].code())
        return 0

    async def _describe(self, resource: Any) -> dict[str, str]:
        futures = self.admin.describe_configs([resource])
        entries = await self.result(futures[resource])
        return {name: entry.value for name, entry in entries.items()}

    async def topic_configs(self, name: str) -> dict[str, str]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        return await self._describe(ConfigResource(ResourceType.TOPIC, name))

    async def broker_configs(self, node_id: int) -> dict[str, str]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        return await self._describe(ConfigResource(ResourceType.BROKER, str(node_id)))

    async def set_config(self, name: str, key: str, value: str) -> None:
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        resource = ConfigResource(
            ResourceType.TOPIC,
            name,
            incremental_configs=[
                ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
            ],
        )
        futures = self.admin.incremental_alter_configs([resource])
        await self.result(futures[resource])

    async def grow(self, name: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions

        futures = self.admin.create_partitions([NewPartitions(name, total)])
        await self.result(futures[name])

    async def delete_records(self, name: str, partition: int, before: int) -> int:
        from confluent_kafka import TopicPartition

        futures = self.admin.delete_records([TopicPartition(name, partition, before)])
        (future,) = futures.values()
        deleted = await self.result(future)
        return int(deleted.low_watermark)

    async def delete(self, name: str) -> None:
        futures = self.admin.delete_topics([name])
        await self.result(futures[name])

    async def topics(self) -> set[str]:
        metadata = await asyncio.to_thread(self.admin.list_topics, timeout=30)
        return set(metadata.topics)

    async def cluster_id(self) -> str:
        described = await self.result(self.admin.describe_cluster())
        return str(described.cluster_id)

    async def committed(self, group: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
        listed = await self.result(futures[group])
        return {(tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions}


Admin = AiokafkaAdmin | KafkaPythonAdmin | ConfluentAdmin


@contextlib.asynccontextmanager
async def admin_client(lib: str, server: RunningServer) -> AsyncIterator[Admin]:
    kinds: dict[str, type[Admin]] = {
        "aiokafka": AiokafkaAdmin,
        "kafka-python": KafkaPythonAdmin,
        "confluent": ConfluentAdmin,
    }
    admin = kinds[lib](server.bootstrap)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


# ---------------------------------------------------------------------------- live consumers
class Member:
    """A consumer process (tests/interop/consumer_proc.py) and the assignments it reported."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.assignments: list[set[tuple[str, int]]] = []
        self.records: list[dict[str, Any]] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            if line["event"] == "assigned":
                self.assignments.append({(t, p) for t, p in line["partitions"]})
            elif line["event"] == "record":
                self.records.append(line)

    @property
    def assignment(self) -> set[tuple[str, int]]:
        return self.assignments[-1] if self.assignments else set()

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self.reader.cancel()


@contextlib.asynccontextmanager
async def consumer(
    lib: str, server: RunningServer, group: str, topic: str
) -> AsyncIterator[Member]:
    args = [
        sys.executable, str(PROC), "--lib", lib, "--bootstrap", server.bootstrap,
        "--group", group, "--topic", topic, "--session-ms", "6000", "--heartbeat-ms", "300",
        "--metadata-max-age-ms", "1000",
    ]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    member = Member(process)
    try:
        yield member
    finally:
        await member.stop()


def produce(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(count):
        producer.send(topic, value=f"r{i}".encode(), partition=i % partitions)
    producer.flush(timeout=30)
    producer.close(timeout=10)


# ------------------------------------------------------------------------------------- tests
TOPIC_ALREADY_EXISTS = 36


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_admin_client_topic_lifecycle_under_a_live_group(lib: str) -> None:
    topic = f"admin-{lib}"
    async with node() as server, admin_client(lib, server) as admin:
        node_id = server.broker.node_id
        assert await admin.cluster_id() == server.broker.config.cluster_id
        # Create, with a config; the second time is refused.
        assert await admin.create(topic, 2, {"retention.ms": "3600000"}) == 0
        assert await admin.create(topic, 2, {}) == TOPIC_ALREADY_EXISTS
        assert topic in await admin.topics()
        # Describe the topic's configs and the broker's settings; change a topic config.
        configs = await admin.topic_configs(topic)
        assert (configs["retention.ms"], configs["cleanup.policy"]) == ("3600000", "delete")
        broker = await admin.broker_configs(node_id)
        assert broker["offsets.topic.replication.factor"] == "1"
        assert broker["auto.create.topics.enable"] == "false"
        await admin.set_config(topic, "segment.ms", "600000")
        changed = await admin.topic_configs(topic)
        assert (changed["segment.ms"], changed["retention.ms"]) == ("600000", "3600000")
        # Grow the topic under a live group: it rebalances onto the new partitions.
        async with consumer(lib, server, f"grow-{lib}", topic) as member:
            await eventually(
                lambda: member.assignment == {(topic, 0), (topic, 1)}, "the member owns both"
            )
            await admin.grow(topic, 4)
            await eventually(
                lambda: member.assignment == {(topic, p) for p in range(4)},
                "the member owns the new partitions too",
            )
            await asyncio.to_thread(produce, server.bootstrap, topic, 4, 40)
            await eventually(lambda: len(member.records) >= 40, "every record is consumed")
        # Delete records: the log start moves, durably, and earlier offsets are gone.
        assert await admin.delete_records(topic, 0, 6) == 6
        assert server.broker.topics.get(topic).partitions[0].log_start_offset == 6  # type: ignore[union-attr]
        # A new group starting from the earliest offsets reads from the new log start.
        async with consumer(lib, server, f"late-{lib}", topic) as late:
            await eventually(lambda: len(late.records) >= 34, "the rest is consumed")
            await asyncio.sleep(0.5)
            first = [r for r in late.records if r["partition"] == 0]
            assert sorted(r["offset"] for r in first) == list(range(6, 10))
        # Delete the topic: it is gone from Metadata and from the data dir.
        await admin.delete(topic)
        await eventually(lambda: server.broker.topics.get(topic) is None, "the topic is gone")
        assert topic not in await admin.topics()
        assert not (server.data_dir / "topics" / topic).exists()


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_group_test_as_users_write_it(lib: str) -> None:
    """Create the topic with the admin client, consume with a group, commit, delete the topic."""
    topic, group, records = f"users-{lib}", f"users-group-{lib}", 30
    async with node() as server, admin_client(lib, server) as admin:
        assert await admin.create(topic, 3, {}) == 0
        await asyncio.to_thread(produce, server.bootstrap, topic, 3, records)
        async with (
            consumer(lib, server, group, topic) as first,
            consumer(lib, server, group, topic) as second,
        ):
            await eventually(
                lambda: (
                    len(first.records) + len(second.records) >= records
                    and not (first.assignment & second.assignment)
                ),
                "two members split the topic and consume every record",
            )
            values = sorted(r["value"] for m in (first, second) for r in m.records)
            assert values == sorted(f"r{i}" for i in range(records))
        committed = await admin.committed(group)
        assert sum(committed.get((topic, p), 0) for p in range(3)) == records
        await admin.delete(topic)
        await eventually(lambda: server.broker.topics.get(topic) is None, "the topic is gone")
        remaining = await admin.committed(group)
        assert not [tp for tp in remaining if tp[0] == topic]


def kafka_python_reads_from(bootstrap: str, topic: str, offset: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    reader = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        tp = TopicPartition(topic, 0)
        reader.assign([tp])
        reader.seek(tp, offset)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for messages in reader.poll(timeout_ms=500).values():
                return int(messages[0].offset)
        raise AssertionError("kafka-python read nothing")
    finally:
        reader.close()


def confluent_reads_from(bootstrap: str, topic: str, offset: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "auto.offset.reset": "earliest"}
    )
    try:
        reader.assign([TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is not None and message.error() is None:
                return int(message.offset())
        raise AssertionError("confluent-kafka read nothing")
    finally:
        reader.close()


async def aiokafka_reads_from(bootstrap: str, topic: str, offset: int) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await reader.start()
    try:
        tp = TopicPartition(topic, 0)
        reader.assign([tp])
        reader.seek(tp, offset)
        return int((await reader.getone()).offset)
    finally:
        await reader.stop()


async def test_consumers_below_the_log_start_reset_to_it() -> None:
    """Fetch below the log start is OFFSET_OUT_OF_RANGE, and auto.offset.reset takes over."""
    async with node() as server:
        server.broker.topics.create("trimmed", 1)
        await asyncio.to_thread(produce, server.bootstrap, "trimmed", 1, 10)
        async with admin_client("kafka-python", server) as admin:
            assert await admin.delete_records("trimmed", 0, 7) == 7
        bootstrap = server.bootstrap
        assert await asyncio.to_thread(kafka_python_reads_from, bootstrap, "trimmed", 2) == 7
        assert await asyncio.to_thread(confluent_reads_from, bootstrap, "trimmed", 2) == 7
        assert await asyncio.wait_for(aiokafka_reads_from(bootstrap, "trimmed", 2), 30) == 7
