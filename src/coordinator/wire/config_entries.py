"""Configs as DescribeConfigs and CreateTopics carry them: Kafka's config types and sources, and
one entry per config. The node's settings (`coordinator.node.described_configs`) and the topics'
(`coordinator.partition_log.topic_configs`) are described with them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ConfigType(IntEnum):
    """DescribeConfigs' config_type values (Kafka's `ConfigDef.Type` as sent on the wire)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """Where a described config's value comes from (DescribeConfigs' config_source)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config as DescribeConfigs and CreateTopics (v5+) show it."""

    name: str
    value: str | None
    source: ConfigSource
    kind: ConfigType
    read_only: bool = False
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()
    """(name, value, source), most specific first, as Kafka lists them."""
