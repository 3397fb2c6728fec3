"""Coordinator configuration, named and defaulted exactly like Kafka's broker settings.

Field names are Python identifiers; each has Kafka's dotted name as its alias, and
`CoordinatorConfig.from_properties` takes the dotted names (as `rebalance serve --set` does).
Invalid values raise `ConfigError` whose message starts with the offending key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

INT32_MAX = 2**31 - 1
#: The server assignors a consumer group may name (`assignors` package names).
SERVER_ASSIGNORS = frozenset({"uniform", "range"})
#: `group.consumer.migration.policy` values (Kafka's `ConsumerGroupMigrationPolicy`, any case).
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class ConfigError(ValueError):
    """An unknown key or an invalid value; the message names the key."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key


class CoordinatorConfig(BaseModel):
    """Group-coordinator settings (Kafka `GroupCoordinatorConfig` names and defaults)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    group_initial_rebalance_delay_ms: int = Field(
        3000, alias="group.initial.rebalance.delay.ms", ge=0, le=INT32_MAX
    )
    group_min_session_timeout_ms: int = Field(
        6000, alias="group.min.session.timeout.ms", ge=0, le=INT32_MAX
    )
    group_max_session_timeout_ms: int = Field(
        1800000, alias="group.max.session.timeout.ms", ge=0, le=INT32_MAX
    )
    group_max_size: int = Field(INT32_MAX, alias="group.max.size", ge=1, le=INT32_MAX)
    offsets_topic_num_partitions: int = Field(
        50, alias="offsets.topic.num.partitions", ge=1, le=INT32_MAX
    )
    offsets_retention_minutes: int = Field(
        10080, alias="offsets.retention.minutes", ge=1, le=INT32_MAX
    )
    offsets_retention_check_interval_ms: int = Field(
        600000, alias="offsets.retention.check.interval.ms", ge=1, le=2**63 - 1
    )
    offset_metadata_max_bytes: int = Field(
        4096, alias="offset.metadata.max.bytes", ge=0, le=INT32_MAX
    )
    # -- consumer groups (KIP-848) ----------------------------------------------------------
    group_consumer_session_timeout_ms: int = Field(
        45000, alias="group.consumer.session.timeout.ms", ge=1, le=INT32_MAX
    )
    group_consumer_min_session_timeout_ms: int = Field(
        45000, alias="group.consumer.min.session.timeout.ms", ge=1, le=INT32_MAX
    )
    group_consumer_max_session_timeout_ms: int = Field(
        60000, alias="group.consumer.max.session.timeout.ms", ge=1, le=INT32_MAX
    )
    group_consumer_heartbeat_interval_ms: int = Field(
        5000, alias="group.consumer.heartbeat.interval.ms", ge=1, le=INT32_MAX
    )
    group_consumer_min_heartbeat_interval_ms: int = Field(
        5000, alias="group.consumer.min.heartbeat.interval.ms", ge=1, le=INT32_MAX
    )
    group_consumer_max_heartbeat_interval_ms: int = Field(
        15000, alias="group.consumer.max.heartbeat.interval.ms", ge=1, le=INT32_MAX
    )
    group_consumer_max_size: int = Field(
        INT32_MAX, alias="group.consumer.max.size", ge=1, le=INT32_MAX
    )
    #: Server assignors by name, the first the default (Kafka lists class names; we list the
    #: names members send as ServerAssignor).
    group_consumer_assignors: tuple[str, ...] = Field(
        ("uniform", "range"), alias="group.consumer.assignors", min_length=1
    )
    #: Kafka 4.3's assignment batching: a group's target assignment is computed at most once
    #: per interval (the epoch bumps of the joins and leaves in between share one computation,
    #: done by the first heartbeat after it); 0 computes one per epoch bump, as Kafka 4.0-4.2.
    group_consumer_assignment_interval_ms: int = Field(
        1000, alias="group.consumer.assignment.interval.ms", ge=0, le=INT32_MAX
    )
    #: Kafka 4.3's name: compute a large group's target assignment off the coordinator's loop
    #: (a worker thread of the shell), so heartbeats go on being answered meanwhile.
    group_consumer_assignor_offload_enable: bool = Field(
        True, alias="group.consumer.assignor.offload.enable"
    )
    #: Kafka's four values (default bidirectional). They govern the online conversion of a
    #: group *with members* (`rebalance.consumer_group.migration`; upgrade: a consumer heartbeat
    #: joining a classic group; downgrade: the last KIP-848 member of a group of classic members
    #: leaves); empty groups change type under every policy, as in Kafka.
    group_consumer_migration_policy: str = Field(
        "bidirectional", alias="group.consumer.migration.policy"
    )

    @field_validator("group_consumer_assignors", mode="before")
    @classmethod
    def _assignor_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(name.strip() for name in value.split(",") if name.strip())
        return value

    @field_validator("group_consumer_assignors")
    @classmethod
    def _known_assignors(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in SERVER_ASSIGNORS]
        if unknown:
            raise ValueError(f"unknown server assignor {unknown[0]!r} (known: uniform, range)")
        return value

    @field_validator("group_consumer_migration_policy")
    @classmethod
    def _known_policy(cls, value: str) -> str:
        if value.lower() not in MIGRATION_POLICIES:
            raise ValueError(f"must be one of {', '.join(MIGRATION_POLICIES)} (got {value!r})")
        return value.lower()

    @model_validator(mode="after")
    def _session_bounds_ordered(self) -> CoordinatorConfig:
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ValueError(
                "must not exceed group.max.session.timeout.ms "
                f"({self.group_min_session_timeout_ms} > {self.group_max_session_timeout_ms})"
            )
        # Kafka's GroupCoordinatorConfig requirements for consumer groups.
        for name, low, value, high in (
            (
                "group.consumer.session.timeout.ms",
                self.group_consumer_min_session_timeout_ms,
                self.group_consumer_session_timeout_ms,
                self.group_consumer_max_session_timeout_ms,
            ),
            (
                "group.consumer.heartbeat.interval.ms",
                self.group_consumer_min_heartbeat_interval_ms,
                self.group_consumer_heartbeat_interval_ms,
                self.group_consumer_max_heartbeat_interval_ms,
            ),
        ):
            if not low <= value <= high:
                raise ValueError(
                    f"{name} must be within its min and max ({low} <= {value} <= {high})"
                )
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError(
                "group.consumer.heartbeat.interval.ms must be less than "
                "group.consumer.session.timeout.ms"
            )
        return self

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @classmethod
    def kafka_keys(cls) -> frozenset[str]:
        """The dotted Kafka names this model accepts."""
        return frozenset(f.alias for f in cls.model_fields.values() if f.alias)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> CoordinatorConfig:
        """Build from Kafka-named properties (values may be strings, as on a command line)."""
        return validate_properties(
            cls, properties, "group coordinator", cross_field_key="group.min.session.timeout.ms"
        )


Model = TypeVar("Model", bound=BaseModel)


def validate_properties(
    model: type[Model], properties: Mapping[str, Any], what: str, *, cross_field_key: str
) -> Model:
    """`model` from Kafka-named properties; `ConfigError` names the first bad key (an unknown
    one, or a bad value). A failed cross-field check is reported under `cross_field_key`."""
    known = {f.alias for f in model.model_fields.values() if f.alias}
    for key in properties:
        if key not in known:
            raise ConfigError(key, f"unknown {what} setting")
    try:
        return model.model_validate(dict(properties))
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        if not first["loc"]:  # the cross-field check: its message names the keys
            raise ConfigError(cross_field_key, message) from None
        key = ".".join(str(part) for part in first["loc"])
        raise ConfigError(key, f"{message} (got {properties.get(key)!r})") from None
