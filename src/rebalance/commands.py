"""Requests as the core sees them: frozen, version-agnostic values.

The wire layer fills these from any request version; `version` is kept where the coordinator's
behaviour depends on it (MEMBER_ID_REQUIRED from JoinGroup v4, SkipAssignment from v9,
GROUP_ID_NOT_FOUND for OffsetCommit v9+, ...). Fields a version lacks take Kafka's defaults
(e.g. generation -1, member id "", no instance id).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The newest request versions the core knows; commands default to them.
LATEST_JOIN_VERSION = 9
LATEST_COMMIT_VERSION = 9


@dataclass(frozen=True, slots=True)
class JoinGroup:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int  # JoinGroup v0 has none: the wire layer passes the session timeout
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None
    version: int = LATEST_JOIN_VERSION


@dataclass(frozen=True, slots=True)
class SyncGroup:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    version: int = 5


@dataclass(frozen=True, slots=True)
class Heartbeat:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    version: int = 4


@dataclass(frozen=True, slots=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroup:
    group_id: str
    members: tuple[LeavingMember, ...]
    version: int = 5


@dataclass(frozen=True, slots=True)
class CommitPartition:
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp_ms: int = -1  # OffsetCommit v1 only; -1 = use the coordinator's clock


@dataclass(frozen=True, slots=True)
class CommitTopic:
    name: str
    partitions: tuple[CommitPartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    group_id: str
    topics: tuple[CommitTopic, ...]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1  # v2-v4 only
    version: int = LATEST_COMMIT_VERSION


@dataclass(frozen=True, slots=True)
class OffsetFetch:
    group_id: str
    #: (topic, partitions) pairs, or None for "every committed offset of the group" (v2+).
    topics: tuple[tuple[str, tuple[int, ...]], ...] | None
    require_stable: bool = False
    version: int = 8


@dataclass(frozen=True, slots=True)
class OffsetDelete:
    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class DescribeGroups:
    group_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListGroups:
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteGroups:
    group_ids: tuple[str, ...]


Command = (
    JoinGroup
    | SyncGroup
    | Heartbeat
    | LeaveGroup
    | OffsetCommit
    | OffsetFetch
    | OffsetDelete
    | DescribeGroups
    | ListGroups
    | DeleteGroups
)
