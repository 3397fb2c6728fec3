"""Configuration: Kafka's names and defaults (spec §5.2); bad values name the key."""

from __future__ import annotations

import pytest

from rebalance.config import ConfigError, CoordinatorConfig


def test_defaults_are_kafkas() -> None:
    config = CoordinatorConfig()
    assert config.group_initial_rebalance_delay_ms == 3000
    assert config.group_min_session_timeout_ms == 6000
    assert config.group_max_session_timeout_ms == 1_800_000
    assert config.group_max_size == 2_147_483_647
    assert config.offsets_topic_num_partitions == 50
    assert config.offsets_retention_minutes == 10080
    assert config.offsets_retention_ms == 10080 * 60_000


def test_properties_use_kafka_names_and_parse_strings() -> None:
    config = CoordinatorConfig.from_properties(
        {"group.initial.rebalance.delay.ms": "0", "group.max.size": "5"}
    )
    assert config.group_initial_rebalance_delay_ms == 0
    assert config.group_max_size == 5


@pytest.mark.parametrize(
    ("properties", "key"),
    [
        ({"group.max.size": "0"}, "group.max.size"),
        ({"group.max.size": "many"}, "group.max.size"),
        ({"offsets.topic.num.partitions": "-1"}, "offsets.topic.num.partitions"),
        ({"group.initial.rebalance.delay.ms": "-5"}, "group.initial.rebalance.delay.ms"),
        ({"offsets.retention.minutes": "0"}, "offsets.retention.minutes"),
        ({"group.no.such.key": "1"}, "group.no.such.key"),
        (
            {"group.min.session.timeout.ms": "9000", "group.max.session.timeout.ms": "8000"},
            "group.min.session.timeout.ms",
        ),
    ],
)
def test_invalid_values_are_rejected_naming_the_key(properties: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        CoordinatorConfig.from_properties(properties)
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}: ")


def test_config_is_immutable() -> None:
    config = CoordinatorConfig()
    with pytest.raises(ValueError, match="frozen"):
        config.group_max_size = 3  # type: ignore[misc]
