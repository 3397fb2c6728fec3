"""kafka-python's admin client on the cluster admin APIs: each call made against Kafka 4.4 and
against this node, both with a topic `kpa-t` of 2 partitions, gives the same result (log dir
paths and disk sizes aside)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from coordinator.testing.peers.kafka_broker import KafkaBroker
from coordinator.testing.server import running_server

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]
TOPIC = "kpa-t"


def admin_calls(bootstrap: str, log_dir: str) -> list[Any]:
    """What kafka-python's admin client returns for each call, made comparable."""
    # imported here: kafka-python's import warns (DeprecationWarning) during collection
    from kafka import TopicPartition, TopicPartitionReplica
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        if TOPIC not in admin.list_topics():
            admin.create_topics([NewTopic(TOPIC, 2, 1)])
        node_id = admin.describe_cluster()["controller_id"]
        for _ in range(100):  # Kafka hosts a new topic's partitions a moment after creating it
            (broker,) = admin.describe_log_dirs({TOPIC: [0, 1, 5]})
            (result,) = broker["log_dirs"]
            if sum(len(t["partitions"]) for t in result["topics"]) == 2:
                break
            time.sleep(0.1)
        described = sorted(
            (t["name"], sorted(p["partition_index"] for p in t["partitions"]))
            for t in result["topics"]
        )
        moved = admin.alter_replica_log_dirs({
            TopicPartitionReplica(TOPIC, 0, node_id): log_dir,
            TopicPartitionReplica(TOPIC, 1, node_id): "/no/such/dir",
        })  # fmt: skip
        elected = admin.elect_leaders(0, {TOPIC: [0, 1]}, raise_errors=False)
        reassigned = admin.alter_partition_reassignments({
            TopicPartition(TOPIC, 0): [node_id], TopicPartition(TOPIC, 1): None,
        })  # fmt: skip
        configs = admin.list_config_resources(["TOPIC", "BROKER"])
        return [
            (broker["broker"] == node_id, result["error_code"], described),
            sorted((str(tpr), error.__name__) for tpr, error in moved.items()),
            sorted(
                (r.topic, p.partition_id, p.error_code)
                for r in elected.replica_election_results
                for p in r.partition_result
            ),
            sorted((str(tp), None if e is None else e.__name__) for tp, e in reassigned.items()),
            admin.list_partition_reassignments(),
            {kind: [n for n in names if n == TOPIC or kind.upper() != "TOPIC"]
             for kind, names in configs.items()},
        ]  # fmt: skip
    finally:
        admin.close()


async def test_kafka_python_admin_calls_get_kafkas_results(kafka_broker: KafkaBroker) -> None:
    theirs = await asyncio.to_thread(
        admin_calls, kafka_broker.bootstrap, str(kafka_broker.log_dir / "data")
    )
    async with running_server() as node:
        ours = await asyncio.to_thread(admin_calls, node.bootstrap, str(node.data_dir))
    assert ours == theirs
