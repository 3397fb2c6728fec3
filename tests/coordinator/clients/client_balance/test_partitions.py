"""TubeMQ's partition keys: `brokerId:topic:partitionId`, read back as they were made."""

from __future__ import annotations

from coordinator.clients.client_balance.partitions import parse_key, partition_key


def test_a_partition_key_is_broker_topic_partition_and_reads_back() -> None:
    assert partition_key(1, "orders", 7) == "1:orders:7"
    assert parse_key("1:orders:7") == (1, "orders", 7)
    assert parse_key(partition_key(12, "t", 0)) == (12, "t", 0)
