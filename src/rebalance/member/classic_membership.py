"""What a classic group member holds between its requests and how that changes.

`ClassicMembership` is the state `ClassicMember` (`classic`) speaks the protocol from: its
settings (`MemberConfig`), member id, generation, leader, the generation that gave what it owns,
the assignment a SyncGroup gave and a heartbeat has yet to confirm, whether it must rejoin; and
the changes every answer may call for, each Kafka's Java client's: rejoin, reset of the
generation (and member id), the ownership lease running out, failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from assignors.spec import TopicPartition
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    SyncGroupReply,
)
from rebalance.errors import ErrorCode
from rebalance.member.base import DONE, MemberBase
from rebalance.member.embedded import EmbeddedProtocol
from rebalance.member.lifecycle import MemberState, fire
from rebalance.member.messages import (
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    MemberFailed,
    TopicsDescribed,
)

Request = FindCoordinator | DescribeTopics | JoinGroup | SyncGroup | Heartbeat | LeaveGroup
#: The answers to `Request`s.
Reply = (
    JoinGroupReply
    | SyncGroupReply
    | HeartbeatReply
    | LeaveGroupReply
    | FindCoordinatorReply
    | TopicsDescribed
)


@dataclass(frozen=True)
class MemberConfig:
    """Kafka's consumer settings that shape the protocol (Java defaults)."""

    group_id: str
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000  # Java sends max.poll.interval.ms
    heartbeat_interval_ms: int = 3_000
    retry_backoff_ms: int = 100
    group_instance_id: str | None = None
    client_id: str = "rebalance-member"

    def __post_init__(self) -> None:
        if not self.group_id:
            raise ValueError("group_id must not be empty")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be lower than session_timeout_ms")


class ClassicMembership(MemberBase[Request]):
    """A classic member's state and its changes; `classic.ClassicMember` speaks from it."""

    def __init__(self, config: MemberConfig, protocol: EmbeddedProtocol) -> None:
        super().__init__(config.session_timeout_ms, config.rebalance_timeout_ms)
        self.config = config
        self.protocol = protocol
        self.member_id = ""
        self.generation = -1
        self.protocol_name: str | None = None
        self.leader_id = ""
        #: The generation that gave what the member owns.
        self.owned_generation = -1
        self.previous: tuple[TopicPartition, ...] = ()
        self._rejoin_needed = False
        #: Assigned by the last SyncGroup, owned once a heartbeat confirms the generation.
        self._pending: frozenset[TopicPartition] | None = None
        self._join_reply: JoinGroupReply | None = None
        self._partition_counts: dict[str, int] | None = None

    @property
    def settled(self) -> bool:
        """In a synced generation, no rebalance pending, every change announced and handled."""
        return (
            self.state is MemberState.STABLE
            and self._pending is None
            and not self._rejoin_needed
            and not self._changes
            and self._unacknowledged == 0
        )

    def _join_due(self) -> bool:
        return self.state in (MemberState.UNJOINED, MemberState.JOINING) or (
            self.state is MemberState.STABLE and self._rejoin_needed
        )

    def _can_heartbeat(self) -> bool:
        """Heartbeats keep a generation alive while stable and while callbacks run before a
        rejoin (Java's heartbeat thread runs until the JoinGroup is sent)."""
        return (
            self.generation >= 0
            and self.member_id != ""
            and self.state in (MemberState.STABLE, MemberState.JOINING)
        )

    # -- state changes -----------------------------------------------------------------------

    def _check_lease(self, now_ms: int) -> None:
        end = self._lease_end_ms()
        if not self.owned or end is None or now_ms < end:
            return
        self._announce(Lost(self.owned, self.owned_generation))
        self.owned = frozenset()
        self.owned_generation = -1
        self._pending = None
        if isinstance(self._in_flight, (JoinGroup, SyncGroup, DescribeTopics)):
            return  # a rebalance is under way: its answer decides the membership
        # Java, too, marks the coordinator unknown once a session passes without an answer.
        self.coordinator = None
        if self.state in (MemberState.STABLE, MemberState.JOINING, MemberState.SYNCING):
            self.generation = -1
            fire(self, "reset")

    def _rejoin(self) -> None:
        self._pending = None
        if self.state in DONE:
            return
        self._rejoin_needed = True
        if self.state in (MemberState.SYNCING, MemberState.JOINING, MemberState.UNJOINED):
            fire(self, "join")

    def _reset(self, *, forget_member_id: bool) -> None:
        """Java's resetStateAndGeneration: owned partitions are lost, the member rejoins."""
        self._pending = None
        if self.owned:
            self._announce(Lost(self.owned, self.owned_generation))
        self.owned = frozenset()
        self.owned_generation = -1
        self.generation = -1
        if forget_member_id:
            self.member_id = ""
        self._drop_lease()
        if self.state in DONE:
            return
        if self.state is not MemberState.UNJOINED:
            fire(self, "reset")
        fire(self, "join")

    def _fail(self, error: ErrorCode, where: str) -> None:
        if self.state in (MemberState.LEFT, MemberState.FAILED):
            return
        self.failure = MemberFailed(error, where)
        self._pending = None
        if self.owned:
            self._announce(Lost(self.owned, self.owned_generation))
            self.owned = frozenset()
        fire(self, "fail")
