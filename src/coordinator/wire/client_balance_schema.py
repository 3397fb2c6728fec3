"""The client-balance extension APIs' messages: kio-style schema classes, version 0, flexible.

They are declared exactly as kio declares Kafka's messages (frozen dataclasses whose fields name
their `kafka_type`; `__api_key__`, `__version__`, `__flexible__`, `__header_schema__`), so
kio's own serializer reads and writes them and `codec.build_response` fills them from a dict:
there is no hand-written codec. Error codes are plain int16 fields (`kafka_type` "int16"), not
kio's `ErrorCode` enum: they carry TubeMQ's codes (400-430) beside Kafka's.

The keys sit far outside Kafka's range (Kafka's highest is below 100): a standard client reads
them in ApiVersions and ignores them. docs/client-balance.md documents every field.

No `from __future__ import annotations` here: kio and the codec read the field types from the
dataclass fields, which must be types, not strings.
"""

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

from coordinator.wire.api_keys import ApiKey
from coordinator.wire.codec import register_schemas


def _string() -> dict[str, str]:
    return {"kafka_type": "string"}


# =========================================================================== heartbeat
@dataclass(frozen=True, slots=True, kw_only=True)
class HeldTopicRequest:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_HEARTBEAT)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic: str = field(metadata=_string())
    """The topic."""
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The partitions of it the node holds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientBalanceHeartbeatRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_HEARTBEAT)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_id: str = field(metadata=_string())
    """The group."""
    member_id: str = field(metadata=_string())
    """The node's member id, chosen by the client and kept for the process's lifetime."""
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """0 to join (or re-join), -1 to leave, else the epoch the join answered."""
    source_count: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """Join: the group's node count; <= 0 turns the sourceCount/nodeId checks off."""
    node_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """Join: this node's id in [0, source_count - 1]."""
    topics: tuple[str, ...] | None = field(metadata=_string(), default=None)
    """Join: the topics the node consumes (the group's topic set); null otherwise."""
    session_timeout_ms: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """Join: the session timeout, within group.{min,max}.session.timeout.ms."""
    held: tuple[HeldTopicRequest, ...] | None = field(default=None)
    """Heartbeat: the partitions the node holds now; null: not reported."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldTopicResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_HEARTBEAT)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic: str = field(metadata=_string())
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientBalanceHeartbeatResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_HEARTBEAT)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time_ms: i32 = field(metadata={"kafka_type": "int32"})
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """0, a Kafka error code, or TubeMQ's (docs/client-balance.md)."""
    error_message: str | None = field(metadata=_string(), default=None)
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The node's epoch: the generation of its commits."""
    heartbeat_interval_ms: i32 = field(metadata={"kafka_type": "int32"})
    source_count: i32 = field(metadata={"kafka_type": "int32"})
    """The group's source count (-1: none, or the checks are off)."""
    held: tuple[HeldTopicResponse, ...]
    """What the coordinator records this node as holding."""


# ============================================================================ register
@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterPartitionRequest:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_REGISTER)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    bootstrap_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """< 0 keeps the committed offset, >= 0 replaces it (TubeMQ's bootstrapOffset)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterTopicRequest:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_REGISTER)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    name: str = field(metadata=_string())
    partitions: tuple[RegisterPartitionRequest, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRegisterRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_REGISTER)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_id: str = field(metadata=_string())
    member_id: str = field(metadata=_string())
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    topics: tuple[RegisterTopicRequest, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterPartitionResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_REGISTER)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    offset: i64 = field(metadata={"kafka_type": "int64"})
    """Where consumption starts: the bootstrap offset, else the committed one (-1: none)."""
    holder: str | None = field(metadata=_string(), default=None)
    """On PARTITION_OCCUPIED: the member id of the live node holding it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterTopicResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_REGISTER)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: str = field(metadata=_string())
    partitions: tuple[RegisterPartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRegisterResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_REGISTER)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time_ms: i32 = field(metadata={"kafka_type": "int32"})
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    error_message: str | None = field(metadata=_string(), default=None)
    topics: tuple[RegisterTopicResponse, ...]


# ============================================================================= release
@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseTopicRequest:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_RELEASE)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    name: str = field(metadata=_string())
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionReleaseRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_RELEASE)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_id: str = field(metadata=_string())
    member_id: str = field(metadata=_string())
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    topics: tuple[ReleaseTopicRequest, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleasePartitionResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_RELEASE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseTopicResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_RELEASE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: str = field(metadata=_string())
    partitions: tuple[ReleasePartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionReleaseResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.PARTITION_RELEASE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time_ms: i32 = field(metadata={"kafka_type": "int32"})
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    topics: tuple[ReleaseTopicResponse, ...]


# ============================================================================ describe
@dataclass(frozen=True, slots=True, kw_only=True)
class ClientBalanceDescribeRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_DESCRIBE)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_ids: tuple[str, ...] = field(metadata=_string())


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedHeldTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic: str = field(metadata=_string())
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedNodeResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    member_id: str = field(metadata=_string())
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    client_id: str = field(metadata=_string())
    client_host: str = field(metadata=_string())
    source_count: i32 = field(metadata={"kafka_type": "int32"})
    node_id: i32 = field(metadata={"kafka_type": "int32"})
    topics: tuple[str, ...] = field(metadata=_string())
    held: tuple[DescribedHeldTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroupResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    group_id: str = field(metadata=_string())
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    state: str = field(metadata=_string())
    """Empty or Stable (a client-balance group never rebalances)."""
    group_epoch: i32 = field(metadata={"kafka_type": "int32"})
    source_count: i32 = field(metadata={"kafka_type": "int32"})
    topics: tuple[str, ...] = field(metadata=_string())
    nodes: tuple[DescribedNodeResponse, ...]
    """Ordered by node id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientBalanceDescribeResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ApiKey.CLIENT_BALANCE_DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time_ms: i32 = field(metadata={"kafka_type": "int32"})
    groups: tuple[DescribedGroupResponse, ...]


#: Every client-balance API's schemas: key -> {version: (request class, response class)}.
SCHEMAS: dict[int, dict[int, tuple[type[Any], type[Any]]]] = {
    ApiKey.CLIENT_BALANCE_HEARTBEAT: {
        0: (ClientBalanceHeartbeatRequest, ClientBalanceHeartbeatResponse)
    },
    ApiKey.PARTITION_REGISTER: {0: (PartitionRegisterRequest, PartitionRegisterResponse)},
    ApiKey.PARTITION_RELEASE: {0: (PartitionReleaseRequest, PartitionReleaseResponse)},
    ApiKey.CLIENT_BALANCE_DESCRIBE: {
        0: (ClientBalanceDescribeRequest, ClientBalanceDescribeResponse)
    },
}


def register_with_codec() -> None:
    """Teach this process's codec the client-balance messages: a server does it when it
    registers the APIs; a client (which registers no API) calls this."""
    for api_key, versions in SCHEMAS.items():
        register_schemas(api_key, versions)
