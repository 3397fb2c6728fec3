"""Broker settings of the wire server, named as in Kafka's broker configuration.

`ServerConfig` holds only what the server infrastructure itself uses. `--set KEY=VALUE` options
(and a `--config` file's lines before them) are parsed by `parse_settings`: all of them are read
first (a later value of a key replaces an earlier one, as in a properties file), then validated
as one configuration, as Kafka's broker validates its settings, so their order never matters.
Every key this model does not know is offered to the `claims` (the group coordinator's own
settings, e.g. `group.initial.rebalance.delay.ms`, live in `rebalance.config` and are claimed
there), which validate their keys together. Settings that only matter on a cluster
(`coordinator.node.cluster_settings`) are kept in `ServerConfig.cluster_only`; any other setting
Kafka's broker knows (`coordinator.node.kafka_settings`) is checked as Kafka checks it and kept in
`ServerConfig.inert`. A key Kafka does not know, or a bad value, is refused with one message
naming the key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from coordinator.node.access_control import check_authorizer, parse_super_users
from coordinator.node.cluster_settings import CLUSTER_ONLY, check_cluster_setting
from coordinator.node.kafka_settings import (
    check_kafka_value,
    kafka_setting,
    unknown_setting_message,
)
from coordinator.wire.security.sasl import DEFAULT_MECHANISMS, parse_mechanisms
from coordinator.wire.security.tls import parse_protocols
from coordinator.wire.transport.connection_quotas import UNLIMITED, parse_overrides
from coordinator.wire.transport.endpoints import parse_endpoints, parse_protocol_map
from rebalance.config import ConfigError as KeyedConfigError
from rebalance.config import config_error

DEFAULT_SOCKET_REQUEST_MAX_BYTES = 104_857_600


class SettingClaim(Protocol):
    """Settings another part of the node owns (the group coordinator's)."""

    def owns(self, key: str) -> bool:
        """Whether `key` is one of its settings."""
        ...

    def settle(self, settings: Mapping[str, str]) -> None:
        """Take all of its settings at once (raw values by key), once every setting has been
        read; raises `rebalance.config.ConfigError` naming the key at fault."""
        ...


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
    cluster_only: dict[str, str] = Field(default_factory=dict)
    """Settings that only matter on a cluster, as given (see
    `coordinator.node.cluster_settings`)."""
    inert: dict[str, str] = Field(default_factory=dict)
    """Other settings of Kafka's broker this node does not act on, as checked
    (`coordinator.node.kafka_settings`)."""
    log_dirs: str | None = Field(default=None, alias="log.dirs")
    """The data dir when `--data-dir` is not given (one directory: this node has one)."""
    log_dir: str | None = Field(default=None, alias="log.dir")
    """Kafka's fallback for `log.dirs`."""
    process_roles: str = Field(default="broker,controller", alias="process.roles")
    """Accepted as Kafka's combined mode is: this node is both, and nothing else."""
    controller_listener_names: str = Field(default="", alias="controller.listener.names")
    """Listeners of a KRaft controller: named in `listeners`, they are not opened here."""
    # Listeners and TLS (`coordinator.wire.transport.endpoints`, `coordinator.wire.security.tls`,
    # docs/security.md).
    listeners: str | None = Field(default=None, alias="listeners")
    """`NAME://HOST:PORT,...`; when given, replaces `--bind`."""
    advertised_listeners: str | None = Field(default=None, alias="advertised.listeners")
    listener_security_protocol_map: str | None = Field(
        default=None, alias="listener.security.protocol.map"
    )
    ssl_keystore_location: str | None = Field(default=None, alias="ssl.keystore.location")
    # Kafka's default store type is JKS; only PEM is read here (see coordinator.wire.security.tls).
    ssl_keystore_type: Literal["PEM"] = Field(default="PEM", alias="ssl.keystore.type")
    ssl_key_password: SecretStr | None = Field(default=None, alias="ssl.key.password")
    ssl_truststore_location: str | None = Field(default=None, alias="ssl.truststore.location")
    ssl_truststore_type: Literal["PEM"] = Field(default="PEM", alias="ssl.truststore.type")
    ssl_client_auth: Literal["none", "requested", "required"] = Field(
        default="none", alias="ssl.client.auth"
    )
    ssl_enabled_protocols: str = Field(default="TLSv1.2,TLSv1.3", alias="ssl.enabled.protocols")
    # SASL (`coordinator.wire.security.sasl`); Kafka's default mechanism list is GSSAPI, not
    # offered here.
    sasl_enabled_mechanisms: str = Field(
        default=DEFAULT_MECHANISMS, alias="sasl.enabled.mechanisms"
    )
    connections_max_reauth_ms: int = Field(
        default=0, ge=0, le=2**63 - 1, alias="connections.max.reauth.ms"
    )
    """KIP-368: an authenticated SASL session lasts this long (0: for the connection's life)."""
    connection_failed_authentication_delay_ms: int = Field(
        default=100, ge=0, le=2**31 - 1, alias="connection.failed.authentication.delay.ms"
    )

    @field_validator("listeners", "advertised_listeners")
    @classmethod
    def _endpoints(cls, value: str | None, info: Any) -> str | None:
        if value is not None:
            parse_endpoints(value, "listeners" if info.field_name == "listeners" else "")
        return value

    @field_validator("listener_security_protocol_map")
    @classmethod
    def _protocol_map(cls, value: str | None) -> str | None:
        if value is not None:
            parse_protocol_map(value)
        return value

    # Connection limits (`coordinator.wire.transport.connection_quotas`); Kafka's names and
    # defaults.
    max_connections: int = Field(default=UNLIMITED, ge=1, le=UNLIMITED, alias="max.connections")
    max_connections_per_ip: int = Field(
        default=UNLIMITED, ge=0, le=UNLIMITED, alias="max.connections.per.ip"
    )
    max_connection_creation_rate: int = Field(
        default=UNLIMITED, ge=1, le=UNLIMITED, alias="max.connection.creation.rate"
    )
    """New connections per second the node accepts; more wait in the listen backlog."""
    max_connections_per_ip_overrides: str = Field(
        default="", alias="max.connections.per.ip.overrides"
    )

    listener_limits: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Per-listener limits, by upper-cased listener name: `listener.name.NAME.max.connections`
    and `listener.name.NAME.max.connection.creation.rate` (Kafka's listener-prefixed names)."""

    @field_validator("max_connections_per_ip_overrides")
    @classmethod
    def _overrides(cls, value: str) -> str:
        parse_overrides(value)
        return value

    # ACLs (`coordinator.node.access_control`): off unless an authorizer is named, as in Kafka.
    authorizer_class_name: str = Field(default="", alias="authorizer.class.name")
    super_users: str = Field(default="", alias="super.users")
    allow_everyone_if_no_acl_found: bool = Field(
        default=False, alias="allow.everyone.if.no.acl.found"
    )

    @field_validator("authorizer_class_name")
    @classmethod
    def _authorizer(cls, value: str) -> str:
        return check_authorizer(value.strip())

    @field_validator("super_users")
    @classmethod
    def _super_users(cls, value: str) -> str:
        parse_super_users(value)
        return value

    @field_validator("sasl_enabled_mechanisms")
    @classmethod
    def _mechanisms(cls, value: str) -> str:
        parse_mechanisms(value)
        return value

    @field_validator("ssl_enabled_protocols")
    @classmethod
    def _tls_versions(cls, value: str) -> str:
        parse_protocols(value)
        return value

    @classmethod
    def kafka_keys(cls) -> frozenset[str]:
        """Every accepted setting name, including aliases such as `broker.id`."""
        names = {f.alias for f in cls.model_fields.values() if f.alias is not None}
        return frozenset(names | set(_KEY_ALIASES))


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
    """Build a `ServerConfig` from `KEY=VALUE` strings, validated as one configuration.

    Keys of `ServerConfig` are validated here; any other key goes to the claim that owns it,
    then to the cluster-only and Kafka tables. An unknown key raises `ConfigError` naming it;
    so does a bad value, after every setting has been read.
    """
    given: dict[str, str] = {}
    for text in assignments:
        key, raw = split_assignment(text)
        given.pop(key, None)  # a repeated key counts where it was last given
        given[key] = raw
    own_keys = ServerConfig.kafka_keys()
    values: dict[str, Any] = dict(base or {})
    cluster_only: dict[str, str] = dict(values.pop("cluster_only", {}))
    inert: dict[str, str] = dict(values.pop("inert", {}))
    listener_limits: dict[str, dict[str, int]] = {
        name: dict(limits) for name, limits in values.pop("listener_limits", {}).items()
    }
    claimed: list[dict[str, str]] = [{} for _ in claims]
    for key, raw in given.items():
        if key in own_keys:
            values[_KEY_ALIASES.get(key, key)] = raw
            continue
        limit = _LISTENER_LIMIT.fullmatch(key)
        if limit is not None:
            listener_limits.setdefault(limit[1].upper(), {})[limit[2]] = _limit_value(key, raw)
            continue
        owner = next((i for i, claim in enumerate(claims) if claim.owns(key)), None)
        if owner is not None:
            claimed[owner][key] = raw
            continue
        if key in CLUSTER_ONLY:
            try:
                cluster_only[key] = check_cluster_setting(key, raw)
            except ValueError as exc:
                raise ConfigError(f"bad value for {key}: {exc}") from None
            continue
        setting = kafka_setting(key)
        if setting is None:
            raise ConfigError(unknown_setting_message(key, own_keys))
        try:
            inert[key] = check_kafka_value(setting, raw)
        except ValueError as exc:
            raise ConfigError(f"bad value for {key}: {exc}") from None
    if cluster_only:
        values["cluster_only"] = cluster_only
    if inert:
        values["inert"] = inert
    if listener_limits:
        values["listener_limits"] = listener_limits
    try:
        config = ServerConfig.model_validate(values)
    except ValidationError as exc:
        raise _bad_value(config_error(exc, given, "listeners")) from None
    _check_listener_limits(config)
    for claim, settings in zip(claims, claimed, strict=True):
        try:
            claim.settle(settings)
        except KeyedConfigError as exc:
            raise _bad_value(exc) from None
    return config


def _bad_value(exc: KeyedConfigError) -> ConfigError:
    return ConfigError(f"bad value for {exc.key}: {exc.problem}")


#: Kafka's listener-prefixed connection limits (`listener.name.internal.max.connections`).
_LISTENER_LIMIT: Final = re.compile(
    r"listener\.name\.([^.]+)\.(max\.connections|max\.connection\.creation\.rate)"
)


def _limit_value(key: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"bad value for {key}: {raw!r} is not a whole number") from None
    if not 1 <= value <= UNLIMITED:
        raise ConfigError(f"bad value for {key}: {value} is not in 1-{UNLIMITED}")
    return value


def _check_listener_limits(config: ServerConfig) -> None:
    """A per-listener limit must name a listener the node serves (PLAINTEXT without
    `listeners`, as `--bind` serves)."""
    if not config.listener_limits:
        return
    served = (
        [e.name for e in parse_endpoints(config.listeners, "listeners")]
        if config.listeners
        else ["PLAINTEXT"]
    )
    for name, limits in config.listener_limits.items():
        if name not in served:
            key = f"listener.name.{name.lower()}.{next(iter(limits))}"
            raise ConfigError(f"{key}: no listener named {name} (listeners: {', '.join(served)})")
