"""Responses as the core produces them: frozen, version-agnostic values.

These are the replies of the APIs every group type shares (offsets, DescribeGroups,
ListGroups, DeleteGroups); each group type's own are in its package (`rebalance.classic.replies`,
...). The wire layer turns each into the kio response class of the request's version (dropping
fields a version lacks and applying per-version nullability). Each command says which reply
answers it (`rebalance.commands.Command`), and how it is answered when the whole request fails
(`Command.error_reply`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.errors import ErrorCode
from rebalance.quick_init import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class OffsetCommitReply:
    topics: tuple[tuple[str, tuple[tuple[int, ErrorCode], ...]], ...]


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchReply:
    error: ErrorCode
    topics: tuple[tuple[str, tuple[FetchedOffset, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetDeleteReply:
    error: ErrorCode
    topics: tuple[tuple[str, tuple[tuple[int, ErrorCode], ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeGroupsReply:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class ListGroupsReply:
    error: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteGroupsReply:
    results: tuple[tuple[str, ErrorCode], ...]
