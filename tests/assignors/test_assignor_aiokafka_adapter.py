"""The aiokafka plug-in against aiokafka's real ClusterMetadata and protocol structs."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.protocol import ConsumerProtocol
from aiokafka.protocol.metadata import MetadataResponse_v1

from assignors.aiokafka import AiokafkaAssignor, ClusterTopics, assignor
from assignors.consumer_protocol import (
    Subscription,
    decode_subscription,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)


def cluster(partitions: dict[str, int]) -> ClusterMetadata:
    """A ClusterMetadata filled the way aiokafka fills it, from a MetadataResponse."""
    metadata = ClusterMetadata()
    brokers = [(0, "b0", 9092, "r0"), (1, "b1", 9092, "r1"), (2, "b2", 9092, None)]
    topics = [
        (0, topic, False, [(0, p, p % 3, [p % 3, (p + 1) % 3], [p % 3]) for p in range(count)])
        for topic, count in partitions.items()
    ]
    metadata.update_metadata(MetadataResponse_v1(brokers, 0, topics))
    return metadata


def rebalance(
    leader: AiokafkaAssignor,
    members: dict[str, AiokafkaAssignor],
    topics: dict[str, list[str]],
    metadata: ClusterMetadata,
    extra: dict[str, bytes] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """One JoinGroup/SyncGroup round as aiokafka runs it (v0 decode on the leader)."""
    joined = {m: a.metadata(topics[m]) for m, a in members.items()} | (extra or {})
    decoded = {m: ConsumerProtocol.METADATA.decode(b) for m, b in joined.items()}
    result = leader.assign(metadata, decoded)
    out = {}
    for member_id, assignment in result.items():
        received = ConsumerProtocol.ASSIGNMENT.decode(assignment.encode())
        if member_id in members:
            members[member_id].on_assignment(received)
        out[member_id] = sorted((tp.topic, tp.partition) for tp in received.partitions())
    return out


async def test_consumer_accepts_the_plugin_instance() -> None:
    plugin = assignor("sticky")
    consumer = AIOKafkaConsumer(
        "t0", group_id="g", bootstrap_servers="localhost:1", partition_assignment_strategy=(plugin,)
    )
    try:
        # aiokafka looks the strategy up by name among the configured objects
        configured = consumer._partition_assignment_strategy
        assert [a for a in configured if a.name == "sticky"] == [plugin]
    finally:
        await consumer.stop()


def test_cluster_topics_reads_counts_and_replica_racks() -> None:
    topics = ClusterTopics(cluster({"t0": 4}))
    assert topics.partition_count("t0") == 4
    assert topics.partition_count("missing") is None
    assert topics.replica_racks("t0", 0) == frozenset({"r0", "r1"})
    assert topics.replica_racks("t0", 1) == frozenset({"r1"})  # broker 2 has no rack


def test_sticky_plugin_keeps_partitions_across_rebalances() -> None:
    metadata = cluster({"t0": 6, "t1": 6})
    members = {m: assignor("sticky") for m in ("a", "b", "c")}
    subs = {m: ["t0", "t1"] for m in members}
    first = rebalance(members["a"], members, subs, metadata)
    assert sorted(len(v) for v in first.values()) == [4, 4, 4]
    assert members["b"].generation == 0
    del members["c"]
    second = rebalance(members["b"], members, subs, metadata)
    assert set(first["a"]) <= set(second["a"]) and set(first["b"]) <= set(second["b"])
    assert members["a"].generation == 1


def test_plugins_keep_state_per_instance() -> None:
    one, two = assignor("sticky"), assignor("sticky")
    metadata = cluster({"t0": 2})
    rebalance(one, {"x": one}, {"x": ["t0"]}, metadata)
    assert one.current_assignment == (("t0", 0), ("t0", 1))
    assert two.current_assignment == ()
    assert decode_subscription(two.metadata(["t0"])).user_data is None


def test_metadata_is_a_full_v3_subscription() -> None:
    plugin = assignor("cooperative-sticky", client_rack="r1")
    plugin.on_generation_assignment(7)
    decoded = decode_subscription(plugin.metadata({"t1", "t0"}))
    assert decoded == Subscription(("t0", "t1"), None, (), 7, "r1", 3)


def test_java_sticky_member_keeps_its_previous_assignment_under_our_leader() -> None:
    metadata = cluster({"t0": 4})
    ours = assignor("sticky")
    java = encode_subscription(
        Subscription(("t0",), encode_sticky_user_data([("t0", 0), ("t0", 3)], 5), (), 5, None)
    )
    result = rebalance(ours, {"ours": ours}, {"ours": ["t0"]}, metadata, {"java": java})
    assert result == {"ours": [("t0", 1), ("t0", 2)], "java": [("t0", 0), ("t0", 3)]}
    assert ours.generation == 6  # one more than the highest generation reported


def test_java_cooperative_member_generation_only_and_kafka_python_bytes_tolerated() -> None:
    metadata = cluster({"t0": 4})
    ours = assignor("sticky")
    java_coop = encode_subscription(
        Subscription(("t0",), encode_cooperative_user_data(9), (("t0", 0),), 9, None)
    )
    kafka_python = encode_subscription(
        Subscription(("t0",), bytes.fromhex("0001") + encode_sticky_user_data([("t0", 1)], 3))
    )
    result = rebalance(
        ours, {"ours": ours}, {"ours": ["t0"]}, metadata, {"j": java_coop, "k": kafka_python}
    )
    assert sorted(len(v) for v in result.values()) == [1, 1, 2]
    assert ours.generation == 10


def test_cooperative_sticky_under_aiokafka_withholds_nothing() -> None:
    """aiokafka members revoke everything before joining, so nothing may be left unassigned."""
    metadata = cluster({"t0": 6})
    members = {m: assignor("cooperative-sticky") for m in ("a", "b")}
    subs = {"a": ["t0"], "b": ["t0"], "c": ["t0"]}
    rebalance(members["a"], members, subs, metadata)
    members["c"] = assignor("cooperative-sticky")
    second = rebalance(members["a"], members, subs, metadata)
    assert sorted(len(v) for v in second.values()) == [2, 2, 2]


@pytest.mark.parametrize("name", ["range", "roundrobin", "uniform", "zookeeper-range"])
def test_every_assignor_plugs_in(name: str) -> None:
    metadata = cluster({"t0": 5})
    members = {m: assignor(name) for m in ("a", "b")}
    result = rebalance(members["a"], members, {"a": ["t0"], "b": ["t0"]}, metadata)
    assert sorted(tp for v in result.values() for tp in v) == [("t0", p) for p in range(5)]
