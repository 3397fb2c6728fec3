"""What a `GroupMember` raises to the application: one hierarchy, retriable or final, with the
Kafka error code when there is one.

    MemberError                 code (ErrorCode | None), retriable (bool)
    ├── CommitError             a commit() that did not commit
    │   ├── RebalanceInProgress retriable: commit again once the rebalance is done (Java's
    │   │                       RebalanceInProgressException)
    │   ├── CommitTimedOut      retriable: not done within the request timeout (coordinator
    │   │                       unreachable, moving or loading; Java's TimeoutException)
    │   └── CommitFailed        final for these partitions: the generation or epoch is gone, or
    │                           the member does not own them (Java's CommitFailedException)
    └── OffsetFetchFailed       committed() could not read the offsets
"""

from __future__ import annotations

from typing import ClassVar

from rebalance.errors import ErrorCode


class MemberError(Exception):
    """Every error a member raises; `code` is Kafka's when the coordinator or the rule has one."""

    retriable: ClassVar[bool] = False

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.code = code


class CommitError(MemberError):
    """The offsets were not committed."""


class RebalanceInProgress(CommitError):
    """The member is between a JoinGroup and its SyncGroup: retry after the rebalance."""

    retriable = True


class CommitTimedOut(CommitError):
    """Retried until the request timeout without an answer that settles it."""

    retriable = True


class CommitFailed(CommitError):
    """Final for these partitions: the member lost them (generation or epoch gone) or never
    owned them; the next owner commits from here."""


class OffsetFetchFailed(MemberError):
    """The group's committed offsets could not be read."""
