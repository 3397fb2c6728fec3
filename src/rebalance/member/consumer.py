"""A KIP-848 consumer-protocol member as a pure state machine.

One request, `ConsumerGroupHeartbeat`: the first with member epoch 0 joins, the answer carries
the member epoch, the heartbeat interval and the member's assignment (by topic id; None when
unchanged). The member reconciles on its own, as Kafka's `MembershipManager` does: partitions
missing from the assignment are revoked first (`Revoked`, callbacks awaited), then the new ones
are taken (`Assigned`), then the next heartbeat — sent at once — acknowledges by listing what
the member now owns. No global barrier: the coordinator hands a partition to its new owner only
after the old owner's heartbeat shows it released it.

Same sans-I/O contract and lifecycle table as `ClassicMember` (UNJOINED -> JOINING, the epoch-0
heartbeat in flight -> STABLE, reconciling there -> LEAVING, epoch -1, or -2 for a static
member -> LEFT); errors through the same table (`Api.CONSUMER_GROUP_HEARTBEAT` rows).

The member id is the client's (ConsumerGroupHeartbeat v1, KIP-1082): the shell draws a UUID and
passes it in, so that this module stays deterministic.

Ownership lease, as in the classic member (`base`): partitions are given up as lost once
`session_timeout_ms` has passed since the send time of the last heartbeat answered NONE, or
`rebalance_timeout_ms` since the send time of the last one whose owned partitions were all in
the assignment (while a revocation is pending, heartbeats re-arm the session but not the
coordinator's revocation timer, which runs from before them).
The session timeout is the coordinator's `group.consumer.session.timeout.ms`: a consumer-protocol
member does not send it, so it is configured here (Kafka's default 45 s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from assignors.spec import TopicPartition
from rebalance.commands import OffsetCommit
from rebalance.consumer_group.commands import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeat,
)
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.errors import ErrorCode
from rebalance.member.actions import Action, Api, action_for
from rebalance.member.base import DONE, MemberBase
from rebalance.member.lifecycle import MemberState, fire
from rebalance.member.messages import (
    Assigned,
    CommitOutcome,
    CommitRefused,
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    MemberFailed,
    Revoked,
    TopicsDescribed,
)
from rebalance.replies import OffsetCommitReply

ConsumerRequest = FindCoordinator | DescribeTopics | ConsumerGroupHeartbeat
ConsumerReply = FindCoordinatorReply | TopicsDescribed | ConsumerGroupHeartbeatReply
IdAssignment = frozenset[tuple[str, int]]  # (topic id, partition)


@dataclass(frozen=True)
class ConsumerMemberConfig:
    group_id: str
    member_id: str
    topics: tuple[str, ...]
    #: A subscription by regex instead of `topics` (KIP-848: the coordinator matches it
    #: against the topics that exist, now and as they are created).
    topic_regex: str | None = None
    group_instance_id: str | None = None
    rack: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300_000
    session_timeout_ms: int = 45_000  # the coordinator's group.consumer.session.timeout.ms
    retry_backoff_ms: int = 100
    client_id: str = "rebalance-member"

    def __post_init__(self) -> None:
        if not self.group_id or not self.member_id:
            raise ValueError("group_id and member_id must not be empty")
        if self.topic_regex is not None and self.topics:
            raise ValueError("subscribe to topics or to a topic regex, not both")


class ConsumerMember(MemberBase[ConsumerRequest]):
    """One member of a KIP-848 consumer group; see the module docstring."""

    def __init__(self, config: ConsumerMemberConfig) -> None:
        super().__init__(config.session_timeout_ms, config.rebalance_timeout_ms)
        self.config = config
        self.member_id = config.member_id
        self.epoch = JOIN_EPOCH
        self.heartbeat_interval_ms = 5_000
        self._target: IdAssignment | None = None  # the last assignment the coordinator sent
        self._names: dict[str, str] = {}  # topic id -> name
        self._ids: dict[str, str] = {}  # name -> topic id
        #: What the heartbeat in flight told the coordinator this member owns.
        self._sent_owned: frozenset[TopicPartition] = frozenset()
        self._ack_due = False

    # -- the shell's interface (as ClassicMember) -------------------------------------------------

    @property
    def generation(self) -> int:
        return self.epoch

    @property
    def settled(self) -> bool:
        """In the group and holding exactly the assignment the coordinator gave it."""
        return (
            self.state is MemberState.STABLE
            and self._target is not None
            and not self._unresolved()
            and self.owned == self._names_of(self._target)
            and not self._changes
            and self._unacknowledged == 0
        )

    @property
    def session_timeout_ms(self) -> int:
        """The session the lease assumes (the coordinator's once learned)."""
        return self._session_ms

    def learn_session_timeout(self, session_ms: int) -> None:
        """The coordinator's `group.consumer.session.timeout.ms`, as it described it."""
        self._session_ms = session_ms

    def _sending(self, request: ConsumerRequest) -> None:
        self._sent_owned = self.owned | self.revoking

    def next_wakeup_ms(self, now_ms: int) -> int | None:
        if self.state in (MemberState.LEFT, MemberState.FAILED):
            return None
        candidates: list[int] = []
        lease_end = self._lease_end_ms()
        if self.owned and lease_end is not None:
            candidates.append(lease_end)
        if self._in_flight is None:
            settled = self._unacknowledged == 0 and not self._changes
            if settled and (
                self.coordinator is None
                or self.state is MemberState.UNJOINED
                or self._closing
                or self._ack_due
                or self._unresolved()
            ):
                candidates.append(max(now_ms, self._retry_at_ms))
            if self.state is MemberState.STABLE:
                candidates.append(max(self._next_heartbeat_ms, self._retry_at_ms))
        return min(candidates) if candidates else None

    def on_reply(self, reply: ConsumerReply, now_ms: int) -> None:
        request, self._in_flight = self._in_flight, None
        if request is None:
            raise ValueError(f"no request in flight for {type(reply).__name__}")
        if self.state in (MemberState.LEFT, MemberState.FAILED):
            return
        if isinstance(request, FindCoordinator) and isinstance(reply, FindCoordinatorReply):
            if reply.error is ErrorCode.NONE:
                self.coordinator = (reply.host, reply.port)
            elif reply.error is ErrorCode.GROUP_AUTHORIZATION_FAILED:
                self._fail(reply.error, "FindCoordinator")
            else:
                self._retry_at_ms = now_ms + self.config.retry_backoff_ms
        elif isinstance(request, DescribeTopics) and isinstance(reply, TopicsDescribed):
            for name, topic_id in reply.ids.items():
                self._names[topic_id] = name
                self._ids[name] = topic_id
            if self._unresolved():
                self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            self._reconcile()
        elif isinstance(request, ConsumerGroupHeartbeat) and isinstance(
            reply, ConsumerGroupHeartbeatReply
        ):
            self._on_heartbeat(request, reply, now_ms)
        else:
            self._in_flight = request
            raise ValueError(f"{type(reply).__name__} does not answer {type(request).__name__}")

    def on_failure(self, now_ms: int) -> None:
        request, self._in_flight = self._in_flight, None
        if request is None:
            return
        if isinstance(request, ConsumerGroupHeartbeat) and request.member_epoch < 0:
            fire(self, "left")
            return
        self.coordinator = None
        self._retry_at_ms = now_ms + self.config.retry_backoff_ms

    def commit(self, offsets: Mapping[TopicPartition, int], *, metadata: str = "") -> OffsetCommit:
        """An OffsetCommit (v9) carrying the member epoch, for partitions this member holds."""
        if self.failure is not None:
            raise self.failure
        if self.epoch <= 0 or self.state is not MemberState.STABLE:
            raise CommitRefused(
                f"not a member with an epoch (epoch {self.epoch})", ErrorCode.FENCED_MEMBER_EPOCH
            )
        return self._offset_commit(
            offsets,
            metadata,
            group_id=self.config.group_id,
            generation_id=self.epoch,
            member_id=self.member_id,
            version=9,
        )

    def on_commit_reply(self, request: OffsetCommit, reply: OffsetCommitReply) -> CommitOutcome:
        errors = [c for _, parts in reply.topics for _, c in parts if c is not ErrorCode.NONE]
        if not errors:
            return CommitOutcome(ErrorCode.NONE, None)
        action = action_for(Api.OFFSET_COMMIT, errors[0])
        if action is Action.REDISCOVER:
            self.coordinator = None
        elif action in (Action.REJOIN, Action.RESET_GENERATION, Action.RESET_MEMBER_ID):
            # A consumer-protocol member's heartbeat is the only authority on its membership
            # (Java's CommitRequestManager does not rejoin or reset either): the commit fails.
            action = Action.FAIL_COMMIT
        elif action is Action.FATAL:
            self._fail(errors[0], "OffsetCommit")
        return CommitOutcome(errors[0], action)

    def on_commit_failure(self) -> None:
        self.coordinator = None

    # -- the protocol ---------------------------------------------------------------------------

    def _next_request(self, now_ms: int) -> ConsumerRequest | None:
        if self.coordinator is None:
            return FindCoordinator(self.config.group_id)
        settled = self._unacknowledged == 0 and not self._changes
        if self._closing:
            leave = self._leave_request(settled)
            if leave is not None or self.state is not MemberState.STABLE:
                return leave
            # the revocation callbacks still run: heartbeats keep the membership meanwhile
            return self._heartbeat() if now_ms >= self._next_heartbeat_ms else None
        if self._unresolved():
            regex = self.config.topic_regex is not None
            return DescribeTopics(None if regex else self.config.topics)
        if self.state in (MemberState.UNJOINED, MemberState.JOINING):
            if not settled:
                return None
            fire(self, "join")
            return self._heartbeat()
        if self.state is MemberState.STABLE:
            self._reconcile()
            settled = self._unacknowledged == 0 and not self._changes
            if (self._ack_due and settled) or now_ms >= self._next_heartbeat_ms:
                self._ack_due = False
                return self._heartbeat()
        return None

    def _heartbeat(self) -> ConsumerGroupHeartbeat:
        """A full heartbeat: every field sent every time (Kafka's clients send only what
        changed; a full request is always valid and keeps this member stateless about it)."""
        owned: dict[str, list[int]] = {}
        for topic, partition in sorted(self.owned | self.revoking):
            owned.setdefault(self._ids[topic], []).append(partition)
        by_regex = self.config.topic_regex is not None
        return ConsumerGroupHeartbeat(
            group_id=self.config.group_id,
            member_id=self.member_id,
            member_epoch=self.epoch,
            instance_id=self.config.group_instance_id,
            rack_id=self.config.rack,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms,
            subscribed_topic_names=None if by_regex else tuple(self.config.topics),
            subscribed_topic_regex=self.config.topic_regex,
            server_assignor=self.config.server_assignor,
            topic_partitions=tuple((t, tuple(ps)) for t, ps in sorted(owned.items())),
            client_id=self.config.client_id,
        )

    def _leave_request(self, settled: bool) -> ConsumerGroupHeartbeat | None:
        if self.owned:
            if self.epoch <= 0:
                self._announce(Lost(self.owned, self.epoch))
            else:
                self._announce(Revoked(self.owned, self.epoch), revoking=True)
            self.owned = frozenset()
            return None
        if not settled or self.state is MemberState.LEAVING:
            return None
        joined = self.state is not MemberState.UNJOINED and self.epoch > 0
        fire(self, "leave")
        if not joined:
            fire(self, "left")
            return None
        epoch = STATIC_LEAVE_EPOCH if self.config.group_instance_id else LEAVE_EPOCH
        return ConsumerGroupHeartbeat(
            group_id=self.config.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.config.group_instance_id,
        )

    def _on_heartbeat(
        self, request: ConsumerGroupHeartbeat, reply: ConsumerGroupHeartbeatReply, now_ms: int
    ) -> None:
        if request.member_epoch < 0:
            fire(self, "left")  # the leave was heard (or not: Java does not retry it)
            return
        if reply.error is ErrorCode.NONE:
            if self.state is MemberState.JOINING:
                fire(self, "synced")
            if reply.member_id:
                self.member_id = reply.member_id
            self.epoch = reply.member_epoch
            if reply.heartbeat_interval_ms > 0:
                self.heartbeat_interval_ms = reply.heartbeat_interval_ms
            self._next_heartbeat_ms = self._sent_ms + self.heartbeat_interval_ms
            if reply.assignment is not None:
                self._target = frozenset(
                    (topic_id, p) for topic_id, ps in reply.assignment for p in ps
                )
            if self._target is not None:
                sent = frozenset((self._ids[t], p) for t, p in self._sent_owned)
                self._prove(self._sent_ms, settled=sent <= self._target)
            self._reconcile()
            return
        action = action_for(Api.CONSUMER_GROUP_HEARTBEAT, reply.error)
        if action is Action.RESET_GENERATION:
            self._fenced()
        elif action is Action.REDISCOVER:
            self.coordinator = None
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
        elif action is Action.BACKOFF:
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            self._next_heartbeat_ms = now_ms
        else:
            self._fail(reply.error, "ConsumerGroupHeartbeat")

    def _unresolved(self) -> bool:
        """The assignment names a topic id this member cannot name yet."""
        return self._target is not None and any(t not in self._names for t, _ in self._target)

    def _names_of(self, ids: IdAssignment) -> frozenset[TopicPartition]:
        return frozenset((self._names[t], p) for t, p in ids)

    def _reconcile(self) -> None:
        """Revoke what the assignment dropped; once those callbacks are done, take the rest."""
        if self._target is None or self._unresolved() or self.state is not MemberState.STABLE:
            return
        if self._unacknowledged or self._changes or self._closing:
            return
        target = self._names_of(self._target)
        revoked = self.owned - target
        if revoked:
            self._announce(Revoked(revoked, self.epoch), revoking=True)
            self.owned -= revoked
            self._ack_due = True
            return
        added = target - self.owned
        if added:
            self.owned = target
            self._announce(Assigned(added, self.epoch))
            self._ack_due = True

    def _fenced(self) -> None:
        """Java's transitionToFenced: the partitions are lost, rejoin with epoch 0, same id."""
        if self.owned:
            self._announce(Lost(self.owned, self.epoch))
        self.owned = frozenset()
        self.epoch = JOIN_EPOCH
        self._target = None
        self._drop_lease()
        if self.state not in DONE and self.state is not MemberState.UNJOINED:
            fire(self, "reset")

    def _check_lease(self, now_ms: int) -> None:
        end = self._lease_end_ms()
        if not self.owned or end is None or now_ms < end:
            return
        self._announce(Lost(self.owned, self.epoch))
        self.owned = frozenset()
        if self._in_flight is None and self.state is MemberState.STABLE:
            self.coordinator = None
            self._fenced()

    def _fail(self, error: ErrorCode, where: str) -> None:
        if self.state in (MemberState.LEFT, MemberState.FAILED):
            return
        self.failure = MemberFailed(error, where)
        if self.owned:
            self._announce(Lost(self.owned, self.epoch))
            self.owned = frozenset()
        fire(self, "fail")
