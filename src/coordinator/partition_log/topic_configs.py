"""Topic configs: Kafka's names, types, defaults and validity rules, and the broker settings
that give their defaults.

CreateTopics, AlterConfigs and IncrementalAlterConfigs store a topic's overrides (validated
here, so a typo or a bad value gets INVALID_CONFIG as from Kafka) and DescribeConfigs shows
them with the defaults of the rest. Deliberate difference from Kafka: the partition log keeps
every record until DeleteRecords or the topic's deletion and has one segment, so retention,
segment, compaction, flush and replication configs are kept and shown but change nothing;
`coordinator.partition_log.partition` says how the log behaves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from coordinator.wire.config_entries import ConfigEntry, ConfigSource, ConfigType

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class InvalidConfigError(ValueError):
    """A topic config Kafka would refuse (INVALID_CONFIG); the message names it."""


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    kind: ConfigType
    default: str
    broker_name: str
    """The broker setting whose value is the default (Kafka's synonym)."""
    check: Callable[[str], str | None] | None = None
    """Returns why a (well-typed) value is invalid, or None."""


def _at_least(low: int | float) -> Callable[[str], str | None]:
    return lambda value: None if float(value) >= low else f"must be at least {low}"


def _between(low: float, high: float) -> Callable[[str], str | None]:
    return lambda value: None if low <= float(value) <= high else f"must be in [{low}, {high}]"


def _one_of(*allowed: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        items = list_items(value) if "," in value else [value.strip()]
        bad = [item for item in items if item not in allowed]
        return f"must be one of {', '.join(allowed)}" if bad or not items else None

    return check


def _def(
    name: str,
    kind: ConfigType,
    default: str,
    broker_name: str | None = None,
    check: Callable[[str], str | None] | None = None,
) -> TopicConfigDef:
    return TopicConfigDef(name, kind, default, broker_name or name, check)


# Kafka's topic-level configs (TopicConfig / LogConfig) with their defaults and broker synonyms.
TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {
    d.name: d
    for d in (
        _def("cleanup.policy", ConfigType.LIST, "delete", "log.cleanup.policy",
             _one_of("compact", "delete")),
        _def("compression.type", ConfigType.STRING, "producer", None,
             _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
        _def("delete.retention.ms", ConfigType.LONG, "86400000",
             "log.cleaner.delete.retention.ms", _at_least(0)),
        _def("file.delete.delay.ms", ConfigType.LONG, "60000", "log.segment.delete.delay.ms",
             _at_least(0)),
        _def("flush.messages", ConfigType.LONG, str(LONG_MAX), "log.flush.interval.messages",
             _at_least(1)),
        _def("flush.ms", ConfigType.LONG, str(LONG_MAX), "log.flush.interval.ms", _at_least(0)),
        _def("follower.replication.throttled.replicas", ConfigType.LIST, "",
             "follower.replication.throttled.replicas"),
        _def("index.interval.bytes", ConfigType.INT, "4096", "log.index.interval.bytes",
             _at_least(0)),
        _def("leader.replication.throttled.replicas", ConfigType.LIST, "",
             "leader.replication.throttled.replicas"),
        _def("local.retention.bytes", ConfigType.LONG, "-2", "log.local.retention.bytes",
             _at_least(-2)),
        _def("local.retention.ms", ConfigType.LONG, "-2", "log.local.retention.ms",
             _at_least(-2)),
        _def("max.compaction.lag.ms", ConfigType.LONG, str(LONG_MAX),
             "log.cleaner.max.compaction.lag.ms", _at_least(1)),
        _def("max.message.bytes", ConfigType.INT, "1048588", "message.max.bytes", _at_least(0)),
        _def("message.timestamp.after.max.ms", ConfigType.LONG, str(LONG_MAX),
             "log.message.timestamp.after.max.ms", _at_least(0)),
        _def("message.timestamp.before.max.ms", ConfigType.LONG, str(LONG_MAX),
             "log.message.timestamp.before.max.ms", _at_least(0)),
        _def("message.timestamp.type", ConfigType.STRING, "CreateTime",
             "log.message.timestamp.type", _one_of("CreateTime", "LogAppendTime")),
        _def("min.cleanable.dirty.ratio", ConfigType.DOUBLE, "0.5",
             "log.cleaner.min.cleanable.ratio", _between(0, 1)),
        _def("min.compaction.lag.ms", ConfigType.LONG, "0", "log.cleaner.min.compaction.lag.ms",
             _at_least(0)),
        _def("min.insync.replicas", ConfigType.INT, "1", None, _at_least(1)),
        _def("preallocate", ConfigType.BOOLEAN, "false", "log.preallocate"),
        _def("remote.storage.enable", ConfigType.BOOLEAN, "false", "log.remote.storage.enable"),
        _def("retention.bytes", ConfigType.LONG, "-1", "log.retention.bytes"),
        _def("retention.ms", ConfigType.LONG, "604800000", "log.retention.ms", _at_least(-1)),
        _def("segment.bytes", ConfigType.INT, "1073741824", "log.segment.bytes",
             _at_least(1_048_576)),
        _def("segment.index.bytes", ConfigType.INT, "10485760", "log.index.size.max.bytes",
             _at_least(4)),
        _def("segment.jitter.ms", ConfigType.LONG, "0", "log.roll.jitter.ms", _at_least(0)),
        _def("segment.ms", ConfigType.LONG, "604800000", "log.roll.ms", _at_least(1)),
        _def("unclean.leader.election.enable", ConfigType.BOOLEAN, "false"),
    )
}  # fmt: skip


def list_items(value: str) -> list[str]:
    """The items of a LIST config's value (also what APPEND/SUBTRACT work on)."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _check_type(definition: TopicConfigDef, value: str) -> str | None:
    text = value.strip()
    kind = definition.kind
    if kind is ConfigType.BOOLEAN:
        return None if text.lower() in {"true", "false"} else "must be true or false"
    if kind in (ConfigType.INT, ConfigType.LONG):
        limit = INT_MAX if kind is ConfigType.INT else LONG_MAX
        try:
            number = int(text)
        except ValueError:
            return f"must be a whole number, got {value!r}"
        return None if -limit - 1 <= number <= limit else f"out of range for {kind.name}"
    if kind is ConfigType.DOUBLE:
        try:
            float(text)
        except ValueError:
            return f"must be a number, got {value!r}"
    return None


def validate_topic_config(name: str, value: str | None) -> str:
    """The stored form of one override, or `InvalidConfigError` naming the problem."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    if value is None:
        raise InvalidConfigError(f"Null value not supported for topic configs: {name}")
    problem = _check_type(definition, value)
    if problem is None and definition.check is not None:
        problem = definition.check(value.strip())
    if problem is not None:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: {problem}")
    if definition.kind is ConfigType.LIST:
        return ",".join(list_items(value))
    if definition.kind is ConfigType.BOOLEAN:
        return value.strip().lower()
    return value.strip()


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Every override validated (see `validate_topic_config`)."""
    return {name: validate_topic_config(name, value) for name, value in configs.items()}


def describe_topic_configs(
    overrides: Mapping[str, str], broker_settings: Mapping[str, str]
) -> list[ConfigEntry]:
    """Every topic config: the topic's override if it has one, else the broker's setting of the
    synonym if the broker was given one, else Kafka's default."""
    entries = []
    for name, definition in sorted(TOPIC_CONFIGS.items()):
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], ConfigSource.TOPIC_CONFIG))
        if definition.broker_name in broker_settings:
            synonyms.append(
                (
                    definition.broker_name,
                    broker_settings[definition.broker_name],
                    ConfigSource.STATIC_BROKER_CONFIG,
                )
            )
        synonyms.append((definition.broker_name, definition.default, ConfigSource.DEFAULT_CONFIG))
        _, value, source = synonyms[0]
        entries.append(ConfigEntry(name, value, source, definition.kind, False, tuple(synonyms)))
    return entries
