"""Coordinator configuration, named and defaulted exactly like Kafka's broker settings.

Field names are Python identifiers; each has Kafka's dotted name as its alias, and
`CoordinatorConfig.from_properties` takes the dotted names (as `rebalance serve --set` does).
Invalid values raise `ConfigError` whose message starts with the offending key.
"""

from __future__ import annotations

import operator
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
        self.problem = problem


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
    def _bounds_ordered(self) -> CoordinatorConfig:
        """Kafka's GroupCoordinatorConfig requirements, checked on the whole configuration; a
        failure names the key at fault: of the two a rule relates, the one given (both given:
        the one Kafka's message is about)."""
        values = self.model_dump(by_alias=True)
        given = {type(self).model_fields[name].alias for name in self.model_fields_set}
        for subject, relation, other in _ORDERED:
            value, bound = values[subject], values[other]
            if _HOLDS[relation](value, bound):
                continue
            if other in given and subject not in given:
                raise ConfigError(
                    other, f"must be {_WORDS[_INVERSE[relation]]} {subject} ({bound} vs {value})"
                )
            raise ConfigError(subject, f"must be {_WORDS[relation]} {other} ({value} vs {bound})")
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


#: (subject, relation, other): the subject's value must stand in the relation to the other's.
#: Kafka's GroupCoordinatorConfig rules, in its order, after our classic session bound.
_ORDERED = (
    ("group.min.session.timeout.ms", "<=", "group.max.session.timeout.ms"),
    ("group.consumer.max.heartbeat.interval.ms", ">=", "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.heartbeat.interval.ms", ">=", "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.heartbeat.interval.ms", "<=", "group.consumer.max.heartbeat.interval.ms"),
    ("group.consumer.max.session.timeout.ms", ">=", "group.consumer.min.session.timeout.ms"),
    ("group.consumer.session.timeout.ms", ">=", "group.consumer.min.session.timeout.ms"),
    ("group.consumer.session.timeout.ms", "<=", "group.consumer.max.session.timeout.ms"),
    ("group.consumer.heartbeat.interval.ms", "<", "group.consumer.session.timeout.ms"),
)
_WORDS = {
    "<": "less than",
    "<=": "less than or equal to",
    ">=": "greater than or equal to",
    ">": "greater than",
}
_INVERSE = {"<": ">", "<=": ">=", ">=": "<=", ">": "<"}
_HOLDS = {"<": operator.lt, "<=": operator.le, ">=": operator.ge, ">": operator.gt}

Model = TypeVar("Model", bound=BaseModel)


def validate_properties(
    model: type[Model], properties: Mapping[str, Any], what: str, *, cross_field_key: str
) -> Model:
    """`model` from Kafka-named properties, validated as one configuration; `ConfigError` names
    the first bad key (an unknown one, or a bad value). A failed check of the whole model names
    the key it raised `ConfigError` for, else `cross_field_key`."""
    known = {f.alias for f in model.model_fields.values() if f.alias}
    for key in properties:
        if key not in known:
            raise ConfigError(key, f"unknown {what} setting")
    try:
        return model.model_validate(dict(properties))
    except ValidationError as exc:
        raise config_error(exc, properties, cross_field_key) from None


def config_error(
    exc: ValidationError, properties: Mapping[str, Any], cross_field_key: str
) -> ConfigError:
    """The first error of a settings model's validation as a `ConfigError`: its key and what
    the key takes, in words (the value given in parentheses), without repeating the key."""
    first = exc.errors()[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, ConfigError):
        return cause
    if not first["loc"]:  # a check of the whole model that named no key
        return ConfigError(cross_field_key, str(first["msg"]).removeprefix("Value error, "))
    key = ".".join(str(part) for part in first["loc"])
    if first["type"] == "value_error":  # the validator's own words, which quote the value
        return ConfigError(key, _problem(first))
    return ConfigError(key, f"{_problem(first)} (got {properties.get(key, first['input'])!r})")


def _problem(error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx", {})
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "takes a whole number"
    if kind in ("bool_parsing", "bool_type"):
        return "takes true or false"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()))
        return {
            "greater_than_equal": f"must be at least {bound}",
            "greater_than": f"must be greater than {bound}",
            "less_than_equal": f"must be at most {bound}",
            "less_than": f"must be less than {bound}",
        }[kind]
    if kind == "literal_error":
        return f"must be {ctx['expected']}"
    if kind == "too_short":
        return "must not be empty"
    if kind == "value_error":
        return str(ctx["error"])
    return str(error["msg"])
