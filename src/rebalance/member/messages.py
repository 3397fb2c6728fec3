"""What a member says and hears besides the coordinator's own commands and replies.

The group requests a member sends are the core's commands (`rebalance.classic.commands.JoinGroup`,
`SyncGroup`, `Heartbeat`, `LeaveGroup`, `OffsetCommit`) and it is answered with the core's replies:
one vocabulary for both ends, so a pure member can be wired straight to a pure coordinator in
tests. Two more requests are the member's own: finding the coordinator and, for a leader, the
partition counts of the subscribed topics. The assignment changes it announces are `Assigned`,
`Revoked` and `Lost` (Kafka's ConsumerRebalanceListener callbacks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assignors.spec import TopicPartition
from rebalance.errors import ErrorCode
from rebalance.member.actions import Action


@dataclass(frozen=True, slots=True)
class FindCoordinator:
    group_id: str


@dataclass(frozen=True, slots=True)
class FindCoordinatorReply:
    error: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1


@dataclass(frozen=True, slots=True)
class DescribeTopics:
    """The partition counts a classic leader's assignor needs, or the topic ids a consumer-
    protocol member must name (Kafka: a Metadata request). `topics` None: every topic (a
    member subscribed by regex knows no names in advance)."""

    topics: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class TopicsDescribed:
    """Partition count per topic (a topic missing here does not exist yet), and topic ids by
    name (the consumer protocol assigns by topic id)."""

    partitions: dict[str, int]
    ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Assigned:
    """Partitions that became this member's (`on_assigned`); never empty."""

    partitions: frozenset[TopicPartition]
    generation: int


@dataclass(frozen=True, slots=True)
class Revoked:
    """Partitions given up in an orderly way (`on_revoked`): offsets may still be committed."""

    partitions: frozenset[TopicPartition]
    generation: int


@dataclass(frozen=True, slots=True)
class Lost:
    """Partitions that may already belong to another member (`on_lost`): no commit possible."""

    partitions: frozenset[TopicPartition]
    generation: int


Change = Assigned | Revoked | Lost


class CommitRefused(Exception):
    """The member cannot commit these offsets now: `retriable` when a rebalance is under way
    (commit again once it is done), final otherwise (not the owner, the generation is gone).
    `code` is the Kafka error the coordinator would answer, None when Kafka has none (Kafka's
    coordinator does not check who owns a partition)."""

    def __init__(
        self, message: str, code: ErrorCode | None = None, *, retriable: bool = False
    ) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = retriable


class MemberFailed(Exception):
    """The member hit an error Kafka's client does not recover from (see `actions`)."""

    def __init__(self, code: ErrorCode, where: str) -> None:
        super().__init__(f"{where}: {code.name}")
        self.code = code
        self.where = where


@dataclass(frozen=True)
class CommitOutcome:
    """What became of one OffsetCommit: done, failed for good, or worth retrying."""

    error: ErrorCode
    action: Action | None  # None when every partition was committed
    #: The commit raced a rebalance (its generation was superseded meanwhile): commit again.
    rebalancing: bool = False

    @property
    def ok(self) -> bool:
        return self.error is ErrorCode.NONE

    @property
    def retriable(self) -> bool:
        return self.action in (Action.RETRY_COMMIT, Action.REDISCOVER)
