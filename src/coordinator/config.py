"""Broker settings of the wire server, named as in Kafka's broker configuration.

`ServerConfig` holds only what the server infrastructure itself uses. `--set KEY=VALUE` options
are parsed by `parse_settings`, which offers every key this model does not know to the
`claim` callables it is given (the group coordinator's own settings, e.g.
`group.initial.rebalance.delay.ms`, live in `rebalance.config` and are claimed there). A key
nobody claims, or a value that does not validate, is rejected with a message naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_SOCKET_REQUEST_MAX_BYTES = 104_857_600

SettingClaim = Callable[[str, str], bool]
"""Offered a `--set` key and its raw value; returns True if it owns the key.

It must raise `ValueError` (naming the key) if it owns the key but the value is bad.
"""


class ConfigError(ValueError):
    """A setting is unknown or has a bad value; the message names the key."""


class ServerConfig(BaseModel):
    """Settings of the Kafka-protocol server (broker side, not group semantics)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    auto_create_topics_enable: bool = Field(default=True, alias="auto.create.topics.enable")
    delete_topic_enable: bool = Field(default=True, alias="delete.topic.enable")
    """False: DeleteTopics answers TOPIC_DELETION_DISABLED."""
    num_partitions: int = Field(default=1, ge=1, le=100_000, alias="num.partitions")
    socket_request_max_bytes: int = Field(
        default=DEFAULT_SOCKET_REQUEST_MAX_BYTES, ge=64, alias="socket.request.max.bytes"
    )
    node_id: int = Field(default=1, ge=0, alias="node.id")
    advertised_host: str | None = Field(default=None, alias="advertised.host.name")
    """Host given to clients in Metadata/FindCoordinator; default: the bound host."""
    advertised_port: int | None = Field(default=None, ge=1, le=65535, alias="advertised.port")
    """Port given to clients; default: the bound port (useful with port 0)."""
    cluster_id: str = Field(default="rebalance-cluster", min_length=1, alias="cluster.id")

    def explicit_settings(self) -> dict[str, str]:
        """The settings given at start (not defaulted), by Kafka name, as strings."""
        values = {}
        for name in sorted(self.model_fields_set):
            alias = type(self).model_fields[name].alias or name
            values[alias] = _kafka_text(getattr(self, name))
        return values

    @classmethod
    def kafka_keys(cls) -> frozenset[str]:
        """Every accepted setting name, including aliases such as `broker.id`."""
        names = {f.alias for f in cls.model_fields.values() if f.alias is not None}
        return frozenset(names | set(_KEY_ALIASES))


def _kafka_text(value: object) -> str:
    """A setting's value as Kafka writes it (booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


# Kafka accepts both names for the node id (ZooKeeper-era and KRaft).
_KEY_ALIASES: Mapping[str, str] = {"broker.id": "node.id"}


def split_assignment(text: str) -> tuple[str, str]:
    """Split one `KEY=VALUE` option; the key must be non-empty."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"setting {text!r} is not of the form KEY=VALUE")
    return key, value.strip()


def parse_settings(
    assignments: Iterable[str],
    *,
    claims: Sequence[SettingClaim] = (),
    base: Mapping[str, Any] | None = None,
) -> ServerConfig:
    """Build a `ServerConfig` from `KEY=VALUE` strings.

    Keys of `ServerConfig` are validated here; any other key is offered, in order, to the
    `claims` callables (the hook where the group coordinator's settings are taken). An
    unclaimed key raises `ConfigError` naming it; so does a bad value.
    """
    own_keys = ServerConfig.kafka_keys()
    values: dict[str, Any] = dict(base or {})
    for text in assignments:
        key, raw = split_assignment(text)
        if key in own_keys:
            values[_KEY_ALIASES.get(key, key)] = raw
            continue
        try:
            claimed = any(claim(key, raw) for claim in claims)
        except ValueError as exc:
            raise ConfigError(f"bad value for {key}: {exc}") from exc
        if not claimed:
            raise ConfigError(f"unknown setting {key!r}")
    try:
        return ServerConfig.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "?"
        raise ConfigError(f"bad value for {key}: {first['msg']}") from exc
