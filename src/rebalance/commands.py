"""Requests as the core sees them: frozen, version-agnostic values.

Here the commands of the APIs every group type shares (offsets, DescribeGroups, ListGroups,
DeleteGroups) and the `Command` base; each group type's own are in its package
(`rebalance.classic.commands`, ...).

The wire layer fills these from any request version; `version` is kept where the coordinator's
behaviour depends on it (MEMBER_ID_REQUIRED from JoinGroup v4, SkipAssignment from v9,
GROUP_ID_NOT_FOUND for OffsetCommit v9+, ...). Fields a version lacks take Kafka's defaults
(e.g. generation -1, member id "", no instance id).

Every command is a `Command[R]`: `R` is the reply type that answers it, so the core's dispatch,
the runtime and the wire adapters know the reply's type statically, and `error_reply` builds the
answer for a request that fails as a whole (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Generic, TypeVar

from rebalance.errors import ErrorCode
from rebalance.quick_init import quick_init
from rebalance.replies import (
    DeleteGroupsReply,
    DescribedGroup,
    DescribeGroupsReply,
    ListGroupsReply,
    OffsetCommitReply,
    OffsetDeleteReply,
    OffsetFetchReply,
)

R_co = TypeVar("R_co", covariant=True)


class Command(Generic[R_co]):
    """A request to the core, answered by an `R_co`."""

    __slots__ = ()

    @abstractmethod
    def error_reply(self, code: ErrorCode) -> R_co:
        """The reply when the whole request fails with `code`."""


#: The newest OffsetCommit version the core knows; commits default to it.
LATEST_COMMIT_VERSION = 9


@quick_init
@dataclass(frozen=True, slots=True)
class CommitPartition:
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp_ms: int = -1  # OffsetCommit v1 only; -1 = use the coordinator's clock


@quick_init
@dataclass(frozen=True, slots=True)
class CommitTopic:
    name: str
    partitions: tuple[CommitPartition, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class OffsetCommit(Command[OffsetCommitReply]):
    group_id: str
    topics: tuple[CommitTopic, ...]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1  # v2-v4 only
    version: int = LATEST_COMMIT_VERSION

    def error_reply(self, code: ErrorCode) -> OffsetCommitReply:
        return OffsetCommitReply(
            tuple((t.name, tuple((p.partition, code) for p in t.partitions)) for t in self.topics)
        )


@dataclass(frozen=True, slots=True)
class OffsetFetch(Command[OffsetFetchReply]):
    group_id: str
    #: (topic, partitions) pairs, or None for "every committed offset of the group" (v2+).
    topics: tuple[tuple[str, tuple[int, ...]], ...] | None
    require_stable: bool = False
    version: int = 8
    #: v9+: who asks. A KIP-848 member names itself and its member epoch; admin clients and
    #: classic consumers leave them None and -1 (and so does librdkafka, observed).
    member_id: str | None = None
    member_epoch: int = -1

    def error_reply(self, code: ErrorCode) -> OffsetFetchReply:
        return OffsetFetchReply(code)


@dataclass(frozen=True, slots=True)
class OffsetDelete(Command[OffsetDeleteReply]):
    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...]

    def error_reply(self, code: ErrorCode) -> OffsetDeleteReply:
        return OffsetDeleteReply(code)


@dataclass(frozen=True, slots=True)
class DescribeGroups(Command[DescribeGroupsReply]):
    group_ids: tuple[str, ...]

    def error_reply(self, code: ErrorCode) -> DescribeGroupsReply:
        return DescribeGroupsReply(tuple(DescribedGroup(g, code) for g in self.group_ids))


@dataclass(frozen=True, slots=True)
class ListGroups(Command[ListGroupsReply]):
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()

    def error_reply(self, code: ErrorCode) -> ListGroupsReply:
        return ListGroupsReply(code)


@dataclass(frozen=True, slots=True)
class DeleteGroups(Command[DeleteGroupsReply]):
    group_ids: tuple[str, ...]

    def error_reply(self, code: ErrorCode) -> DeleteGroupsReply:
        return DeleteGroupsReply(tuple((g, code) for g in self.group_ids))
