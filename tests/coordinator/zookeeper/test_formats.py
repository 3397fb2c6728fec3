"""Znode contents byte-for-byte as Kafka 0.8.2 writes them (`Json.encode` over Scala maps)."""

from __future__ import annotations

import pytest

from rebalance.zookeeper.formats import (
    BrokerRegistration,
    ConsumerRegistration,
    FormatError,
    encode_topic,
    parse_broker,
    parse_consumer,
    parse_offset,
    parse_topic,
)
from rebalance.zookeeper.scala_order import immutable_map_order, java_hash_code, mutable_map_order


def test_broker_registration_has_scala_hash_map_key_order() -> None:
    # Five keys make an immutable.HashMap: jmx_port, timestamp, host, version, port.
    registration = BrokerRegistration(0, "kafka1", 9092, timestamp="1410887399155")
    assert registration.encode() == (
        b'{"jmx_port":-1,"timestamp":"1410887399155","host":"kafka1","version":1,"port":9092}'
    )


def test_later_brokers_keep_the_same_relative_key_order() -> None:
    # Real 0.10 registrations add endpoints and rack and list the five 0.8 keys in this order.
    keys = ["version", "host", "port", "jmx_port", "timestamp", "endpoints", "rack"]
    assert immutable_map_order(keys) == [
        "jmx_port", "timestamp", "endpoints", "host", "version", "port", "rack"
    ]  # fmt: skip


def test_topic_registration_of_ten_partitions_as_a_real_cluster_holds_it() -> None:
    assert encode_topic({p: [0] for p in range(10)}) == (
        b'{"version":1,"partitions":{"8":[0],"4":[0],"9":[0],"5":[0],"6":[0],"1":[0],'
        b'"0":[0],"2":[0],"7":[0],"3":[0]}}'
    )


def test_small_topics_keep_the_mutable_hash_map_order_of_their_creation() -> None:
    assert encode_topic({0: [3], 1: [3]}) == b'{"version":1,"partitions":{"1":[3],"0":[3]}}'
    assert encode_topic({0: [1]}) == b'{"version":1,"partitions":{"0":[1]}}'
    assert mutable_map_order(range(4)) == [2, 1, 3, 0]


def test_grown_topic_is_a_mutable_map_of_string_ids() -> None:
    order = [p for p in mutable_map_order([str(p) for p in range(20)])]
    data = encode_topic({p: [1] for p in range(20)}, grown=True)
    assert data.startswith(b'{"version":1,"partitions":{"' + order[0].encode() + b'":[1]')
    assert parse_topic("t", data) == {p: [1] for p in range(20)}


def test_static_consumer_registration() -> None:
    registration = ConsumerRegistration((("orders", 2),), timestamp="1700000000000")
    assert registration.encode() == (
        b'{"version":1,"subscription":{"orders":2},"pattern":"static","timestamp":"1700000000000"}'
    )
    assert parse_consumer("c", registration.encode()) == registration


def test_wildcard_registration_escapes_its_regex_as_json() -> None:
    registration = ConsumerRegistration((("logs/.*|a", 1),), pattern="white_list", timestamp="5")
    data = registration.encode()
    assert data == (
        b'{"version":1,"subscription":{"logs\\/.*|a":1},"pattern":"white_list","timestamp":"5"}'
    )
    assert parse_consumer("c", data).subscription == (("logs/.*|a", 1),)


def test_subscriptions_of_more_than_four_topics_are_hash_ordered() -> None:
    topics = [(f"t{i}", 1) for i in range(6)]
    data = ConsumerRegistration(tuple(topics), timestamp="1").encode()
    listed = [name for name in immutable_map_order([t for t, _ in topics])]
    assert data.index(listed[0].encode()) < data.index(listed[-1].encode())
    assert listed != [t for t, _ in topics]


def test_readers_accept_any_key_order_and_reject_garbage() -> None:
    broker = parse_broker(7, b'{"port":1,"host":"h","version":1}')
    assert (broker.host, broker.port, broker.address) == ("h", 1, "h:1")
    assert parse_broker(1, b'{"host":"::1","port":9}').address == "[::1]:9"
    with pytest.raises(FormatError):
        parse_broker(1, b"host:port")
    with pytest.raises(FormatError):
        parse_consumer("c", b'{"version":1}')
    with pytest.raises(FormatError):
        parse_topic("t", b'{"partitions":{"x":[1]}}')
    assert parse_offset("/o", b"42") == 42
    with pytest.raises(FormatError):
        parse_offset("/o", b"forty")


def test_wildcard_with_empty_subscription_reads_as_static() -> None:
    registration = parse_consumer("c", b'{"pattern":"white_list","subscription":{}}')
    assert registration.pattern == "static" and registration.subscription == ()


def test_java_hash_codes() -> None:
    assert java_hash_code("version") == 351608024
    assert java_hash_code("") == 0
    assert java_hash_code(-5) == -5
