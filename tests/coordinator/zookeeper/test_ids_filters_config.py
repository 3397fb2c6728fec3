"""Consumer ids, thread ids, topic filters and settings as Kafka 0.8.2 codes them."""

from __future__ import annotations

import uuid

import pytest

from rebalance.config import ConfigError
from rebalance.zookeeper.config import ZooKeeperConsumerConfig
from rebalance.zookeeper.ids import consumer_id, java_order, thread_id, threads_per_topic
from rebalance.zookeeper.topic_filter import InvalidTopicFilter, blacklist, normalise, whitelist


def test_configured_consumer_id_is_prefixed_by_the_group() -> None:
    assert consumer_id("billing", "c1", host="h", now_ms=1, uuid_int=0) == "billing_c1"


def test_generated_consumer_id_uses_unpadded_hex_of_the_uuids_high_half() -> None:
    value = uuid.UUID("0abcdef1-2345-4678-9abc-def012345678").int
    generated = consumer_id("g", None, host="box", now_ms=1700000000000, uuid_int=value)
    # Long.toHexString drops the leading zero: "abcdef12", not "0abcdef1".
    assert generated == "g_box-1700000000000-abcdef12"
    negative = uuid.UUID("f0000000-0000-4000-8000-000000000000").int
    assert consumer_id("g", None, host="h", now_ms=2, uuid_int=negative) == "g_h-2-f0000000"


def test_thread_ids_sort_as_java_strings() -> None:
    assert thread_id("g_c", 3) == "g_c-3"
    assert threads_per_topic("g_c", {"t": 2, "u": 1}) == {"t": ["g_c-0", "g_c-1"], "u": ["g_c-0"]}
    assert java_order(["c-2", "c-10", "c-1"]) == ["c-1", "c-10", "c-2"]


@pytest.mark.parametrize(
    ("raw", "regex"),
    [
        (" a, b ", "a|b"),
        ('"logs.*"', "logs.*"),
        ("'x'", "x"),
        ("\t orders,payments\n", "orders|payments"),
    ],
)
def test_topic_filter_normalisation(raw: str, regex: str) -> None:
    assert normalise(raw) == regex
    assert whitelist(raw).regex == regex


def test_whitelist_matches_whole_names_and_hides_internal_topics() -> None:
    f = whitelist("orders.*,__consumer_offsets")
    assert f.allows("orders-eu") and not f.allows("old-orders")
    assert not f.allows("__consumer_offsets")
    assert f.allows("__consumer_offsets", exclude_internal_topics=False)


def test_blacklist_allows_what_it_does_not_match() -> None:
    f = blacklist("tmp.*")
    assert f.allows("orders") and not f.allows("tmp1") and not f.allows("__consumer_offsets")


def test_invalid_regex_is_refused_as_0_8_words_it() -> None:
    with pytest.raises(InvalidTopicFilter, match=r"^a\(\|b is an invalid regex\.$"):
        whitelist("a(,b")


def test_consumer_settings_have_0_8_defaults() -> None:
    config = ZooKeeperConsumerConfig.from_properties(
        {"group.id": "g", "zookeeper.connect": "127.0.0.1:2181"}
    )
    assert config.zookeeper_session_timeout_ms == 6000
    assert config.connection_timeout_ms == 6000
    assert config.rebalance_max_retries == 4
    assert config.backoff_ms == 2000  # rebalance.backoff.ms defaults to zookeeper.sync.time.ms
    assert config.auto_commit_interval_ms == 60000 and config.auto_commit_enable
    assert config.auto_offset_reset == "largest"
    assert config.partition_assignment_strategy == "range"
    assert config.effective_client_id == "g"


@pytest.mark.parametrize(
    ("properties", "key"),
    [
        ({"group.id": "bad group"}, "group.id"),
        ({"group.id": "g", "offsets.storage": "kafka"}, "offsets.storage"),
        ({"group.id": "g", "auto.offset.reset": "earliest"}, "auto.offset.reset"),
        ({"group.id": "g", "rebalance.max.retries": "-1"}, "rebalance.max.retries"),
        ({"group.id": "g", "fetch.size": "1"}, "fetch.size"),
    ],
)
def test_bad_settings_name_their_key(properties: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as error:
        ZooKeeperConsumerConfig.from_properties({"zookeeper.connect": "zk:2181", **properties})
    assert error.value.key == key
