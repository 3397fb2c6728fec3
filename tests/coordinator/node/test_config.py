"""`--set KEY=VALUE` settings with Kafka broker names, and the hook for other owners' keys."""

from __future__ import annotations

import re

import pytest

from coordinator.node.config import ConfigError, ServerConfig, parse_settings


def test_defaults_match_kafka() -> None:
    config = parse_settings([])
    assert config.auto_create_topics_enable is True
    assert config.num_partitions == 1
    assert config.socket_request_max_bytes == 104_857_600


def test_kafka_names_are_accepted() -> None:
    config = parse_settings(
        [
            "auto.create.topics.enable=false",
            "num.partitions=4",
            "socket.request.max.bytes=1048576",
            "broker.id=3",
            "advertised.host.name=kafka.local",
            "advertised.port=19092",
        ]
    )
    assert (config.auto_create_topics_enable, config.num_partitions) == (False, 4)
    assert (config.node_id, config.advertised_host, config.advertised_port) == (
        3,
        "kafka.local",
        19092,
    )
    assert config.socket_request_max_bytes == 1_048_576


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("num.partitions=zero", "bad value for num.partitions"),
        ("num.partitions=0", "bad value for num.partitions"),
        ("auto.create.topics.enable=perhaps", "bad value for auto.create.topics.enable"),
        ("advertised.port=70000", "bad value for advertised.port"),
        ("no.such.key=1", "unknown setting 'no.such.key'"),
        ("num.partitions", "not of the form KEY=VALUE"),
        ("=3", "not of the form KEY=VALUE"),
    ],
)
def test_bad_settings_name_the_key(setting: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_settings([setting])


def test_other_keys_are_offered_to_claims() -> None:
    claimed: dict[str, int] = {}

    def group_settings(key: str, value: str) -> bool:
        if key != "group.initial.rebalance.delay.ms":
            return False
        claimed[key] = int(value)
        return True

    config = parse_settings(
        ["group.initial.rebalance.delay.ms=0", "num.partitions=2"], claims=[group_settings]
    )
    assert claimed == {"group.initial.rebalance.delay.ms": 0}
    assert config.num_partitions == 2
    with pytest.raises(
        ConfigError, match=re.escape("bad value for group.initial.rebalance.delay.ms")
    ):
        parse_settings(["group.initial.rebalance.delay.ms=soon"], claims=[group_settings])
    with pytest.raises(ConfigError, match=re.escape("unknown setting 'group.max.size'")):
        parse_settings(["group.max.size=5"], claims=[group_settings])


def test_every_alias_is_listed() -> None:
    assert {"broker.id", "node.id", "num.partitions"} <= ServerConfig.kafka_keys()
