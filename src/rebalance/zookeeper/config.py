"""The 0.8 high-level consumer's settings that a ZooKeeper-coordinated consumer uses.

Names and defaults are `kafka.consumer.ConsumerConfig` and `ZKConfig` of 0.8.2 (the code; the
0.8 docs differ on `queued.max.message.chunks`, which we do not use). Values may be strings, as
in a properties file. `offsets.storage` other than `zookeeper` is refused: offsets live in
ZooKeeper here, which is the point of this mode.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rebalance.config import INT32_MAX, validate_properties

_LEGAL_ID = re.compile(r"[a-zA-Z0-9._-]*")


class ZooKeeperConsumerConfig(BaseModel):
    """`ConsumerConfig` (0.8.2) for the ZooKeeper mode."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    group_id: str = Field(alias="group.id")
    zookeeper_connect: str = Field(alias="zookeeper.connect", min_length=1)
    consumer_id: str | None = Field(None, alias="consumer.id")
    client_id: str | None = Field(None, alias="client.id")
    """Defaults to the group id."""
    zookeeper_session_timeout_ms: int = Field(
        6000, alias="zookeeper.session.timeout.ms", ge=1, le=INT32_MAX
    )
    zookeeper_connection_timeout_ms: int | None = Field(
        None, alias="zookeeper.connection.timeout.ms", ge=1, le=INT32_MAX
    )
    """Defaults to the session timeout."""
    zookeeper_sync_time_ms: int = Field(2000, alias="zookeeper.sync.time.ms", ge=0, le=INT32_MAX)
    rebalance_max_retries: int = Field(4, alias="rebalance.max.retries", ge=0, le=INT32_MAX)
    rebalance_backoff_ms: int | None = Field(None, alias="rebalance.backoff.ms", ge=0, le=INT32_MAX)
    """Defaults to `zookeeper.sync.time.ms`."""
    auto_commit_enable: bool = Field(True, alias="auto.commit.enable")
    auto_commit_interval_ms: int = Field(60_000, alias="auto.commit.interval.ms", ge=1)
    auto_offset_reset: Literal["smallest", "largest"] = Field("largest", alias="auto.offset.reset")
    partition_assignment_strategy: Literal["range", "roundrobin"] = Field(
        "range", alias="partition.assignment.strategy"
    )
    exclude_internal_topics: bool = Field(True, alias="exclude.internal.topics")
    offsets_storage: Literal["zookeeper"] = Field("zookeeper", alias="offsets.storage")
    fetch_message_max_bytes: int = Field(
        1024 * 1024, alias="fetch.message.max.bytes", ge=1, le=INT32_MAX
    )
    fetch_min_bytes: int = Field(1, alias="fetch.min.bytes", ge=0, le=INT32_MAX)
    fetch_wait_max_ms: int = Field(100, alias="fetch.wait.max.ms", ge=0, le=INT32_MAX)
    socket_timeout_ms: int = Field(30_000, alias="socket.timeout.ms", ge=1, le=INT32_MAX)
    refresh_leader_backoff_ms: int = Field(200, alias="refresh.leader.backoff.ms", ge=0)

    @field_validator("group_id", "client_id")
    @classmethod
    def _legal_characters(cls, value: str | None) -> str | None:
        """`Config.validateChars`: ASCII alphanumerics, '.', '_' and '-' only."""
        if value is not None and not _LEGAL_ID.fullmatch(value):
            raise ValueError(
                f"{value} is illegal, contains a character other than ASCII alphanumerics, "
                "'.', '_' and '-'"
            )
        return value

    @model_validator(mode="after")
    def _group_id_present(self) -> ZooKeeperConsumerConfig:
        if not self.group_id:
            raise ValueError("group.id is required")
        return self

    @property
    def effective_client_id(self) -> str:
        return self.client_id if self.client_id is not None else self.group_id

    @property
    def connection_timeout_ms(self) -> int:
        return self.zookeeper_connection_timeout_ms or self.zookeeper_session_timeout_ms

    @property
    def backoff_ms(self) -> int:
        """`rebalance.backoff.ms`, which defaults to `zookeeper.sync.time.ms`."""
        if self.rebalance_backoff_ms is not None:
            return self.rebalance_backoff_ms
        return self.zookeeper_sync_time_ms

    @classmethod
    def kafka_keys(cls) -> frozenset[str]:
        return frozenset(f.alias for f in cls.model_fields.values() if f.alias)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> ZooKeeperConsumerConfig:
        """Build from 0.8 property names; a bad key or value raises `ConfigError` naming it."""
        return validate_properties(
            cls, properties, "ZooKeeper consumer", cross_field_key="group.id"
        )
