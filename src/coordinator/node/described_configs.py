"""Configs as DescribeConfigs shows them: Kafka's config types and sources, one entry per
setting, and the catalogue of the settings this node runs with.

The node's settings come from several models (the server's `ServerConfig`, the group
coordinator's `CoordinatorConfig`, the settings that only matter on a cluster, the other
settings of Kafka's broker given (`coordinator.node.kafka_settings`), and `--bind`,
`--advertise` and `--data-dir` as `listeners`, `advertised.listeners` and `log.dirs`): each adds
itself to the `BrokerSettings` service at start, and DescribeConfigs for the broker lists them. A
setting given at start (`--set`) is STATIC_BROKER_CONFIG, one left at its default
DEFAULT_CONFIG; all are read-only, because this node has no dynamic broker configs (a deliberate
difference from Kafka: change them by restarting with other `--set` values).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, SecretStr

from coordinator.wire.config_entries import ConfigEntry, ConfigSource, ConfigType

INT32_MAX = 2**31 - 1


def kafka_text(value: object) -> str | None:
    """A setting's value as Kafka writes it (booleans in lower case; None stays None)."""
    if value is None or isinstance(value, SecretStr):  # a password is never shown, as in Kafka
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _kind(annotation: Any, metadata: list[Any]) -> ConfigType:
    if annotation is SecretStr or SecretStr in typing.get_args(annotation):
        return ConfigType.PASSWORD
    if annotation is bool:
        return ConfigType.BOOLEAN
    if annotation is int:
        upper = [getattr(m, "le", None) for m in metadata]
        return (
            ConfigType.LONG
            if any(u is not None and u > INT32_MAX for u in upper)
            else ConfigType.INT
        )
    return ConfigType.STRING


def model_entries(model: BaseModel, skip: Iterable[str] = ()) -> list[ConfigEntry]:
    """A read-only entry for every Kafka-named (aliased) field of a settings model."""
    skipped = set(skip)
    entries = []
    for name, info in type(model).model_fields.items():
        if info.alias is None or name in skipped:
            continue
        source = (
            ConfigSource.STATIC_BROKER_CONFIG
            if name in model.model_fields_set
            else ConfigSource.DEFAULT_CONFIG
        )
        value = kafka_text(getattr(model, name))
        kind = _kind(info.annotation, list(info.metadata))
        entries.append(
            ConfigEntry(info.alias, value, source, kind, True, ((info.alias, value, source),))
        )
    return entries


def table_entries(
    given: Mapping[str, str], table: Mapping[str, tuple[ConfigType, str | None]]
) -> list[ConfigEntry]:
    """Read-only entries for settings described by a (type, Kafka default) table."""
    entries = []
    for name, (kind, default) in table.items():
        explicit = name in given
        value = given[name] if explicit else default
        source = ConfigSource.STATIC_BROKER_CONFIG if explicit else ConfigSource.DEFAULT_CONFIG
        entries.append(ConfigEntry(name, value, source, kind, True, ((name, value, source),)))
    return entries


def given_entry(name: str, value: str, kind: ConfigType) -> ConfigEntry:
    """A read-only setting given at start outside `--set` (the bind address, the data dir)."""
    source = ConfigSource.STATIC_BROKER_CONFIG
    return ConfigEntry(name, value, source, kind, True, ((name, value, source),))


class BrokerSettings:
    """The catalogue of every setting the node runs with (a service on the `Broker`)."""

    def __init__(self) -> None:
        self._sources: list[Callable[[], Iterable[ConfigEntry]]] = []

    def add(self, source: Callable[[], Iterable[ConfigEntry]]) -> None:
        self._sources.append(source)

    def entries(self) -> list[ConfigEntry]:
        """Every setting once, by name (the first source to name it wins)."""
        found: dict[str, ConfigEntry] = {}
        for source in self._sources:
            for entry in source():
                found.setdefault(entry.name, entry)
        return sorted(found.values(), key=lambda e: e.name)

    def explicit(self) -> dict[str, str]:
        """The settings given at start, by name (topic configs' defaults follow them)."""
        return {
            e.name: e.value
            for e in self.entries()
            if e.source is ConfigSource.STATIC_BROKER_CONFIG and e.value is not None
        }
