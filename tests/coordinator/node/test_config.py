"""`--set KEY=VALUE` settings with Kafka broker names, and the hook for other owners' keys."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest

from coordinator.node.config import ConfigError, ServerConfig, parse_settings
from rebalance.config import ConfigError as KeyedConfigError


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


class DelayClaim:
    """Owns one key; takes it once every setting is read."""

    def __init__(self) -> None:
        self.settled: list[dict[str, str]] = []

    def owns(self, key: str) -> bool:
        return key == "group.initial.rebalance.delay.ms"

    def settle(self, settings: Mapping[str, str]) -> None:
        for key, value in settings.items():
            if not value.isdigit():
                raise KeyedConfigError(key, f"takes a whole number (got {value!r})")
        self.settled.append(dict(settings))


def test_other_keys_are_offered_to_claims_which_take_them_at_once() -> None:
    claim = DelayClaim()
    config = parse_settings(
        [
            "group.initial.rebalance.delay.ms=5",
            "num.partitions=2",
            "group.initial.rebalance.delay.ms=0",
        ],
        claims=[claim],
    )  # fmt: skip
    assert claim.settled == [{"group.initial.rebalance.delay.ms": "0"}]  # the last value, once
    assert config.num_partitions == 2
    with pytest.raises(
        ConfigError,
        match=re.escape("bad value for group.initial.rebalance.delay.ms: takes a whole number"),
    ):
        parse_settings(["group.initial.rebalance.delay.ms=soon"], claims=[DelayClaim()])


def test_every_alias_is_listed() -> None:
    assert {"broker.id", "node.id", "num.partitions"} <= ServerConfig.kafka_keys()
