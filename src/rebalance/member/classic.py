"""A classic-protocol group member as a pure state machine (eager and KIP-429 cooperative).

Sans-I/O, like the coordinator core: the shell asks `poll(now_ms)` for the next request to send
(at most one group request is in flight), sends it, and hands back the reply with
`on_reply(reply, now_ms)` or the failure with `on_failure(now_ms)`; `next_wakeup_ms()` says when
to ask again. Assignment changes come out of `take_changes()`; the shell runs the application's
callbacks and then calls `changes_done()`. Kafka's listener rule holds: no JoinGroup or
LeaveGroup is sent while announced changes are not yet done (the revocation is complete before
the coordinator can hand the partitions to anyone else); heartbeats go on meanwhile.

Rebalance protocols (`EmbeddedProtocol.cooperative`):

* eager: before every JoinGroup the member revokes everything it owns;
* cooperative (KIP-429): the member rejoins keeping what it owns and lists it in its
  subscription; the leader's cooperative assignor withholds partitions still owned by another
  member; after SyncGroup the member revokes only what it lost, and if it revoked anything it
  rejoins at once (the second rebalance, in which the withheld partitions are handed out).

Errors go through `actions.action_for` (Kafka's Java client's choices, one table).

Ownership lease (not in Kafka's classic client, added here on purpose). Kafka's Java consumer
keeps believing it owns its partitions while its heartbeats fail, until it hears an error; by
then the coordinator may have given them away. This member gives them up as *lost* once
`session_timeout_ms` has passed since it *sent* the last heartbeat the coordinator accepted for
the generation the member holds (NONE, or REBALANCE_IN_PROGRESS: both re-arm the session), or
`rebalance_timeout_ms` since it sent the last one answered NONE (in Stable, or while its own
callbacks run before it rejoins), whichever comes first. The coordinator cannot remove it
earlier: an accepted heartbeat re-armed its session when it arrived, after it was sent, and a
rebalance the member has not heard of began after the last NONE was answered, so its join
deadline falls at least the rebalance timeout later. A drain in `on_revoked` may therefore run
up to the rebalance timeout while heartbeats go on. Only heartbeats count: a JoinGroup or
SyncGroup answered at once (the group already Stable) re-arms nothing at the coordinator. So
partitions new in a SyncGroup are owned (and announced) once the heartbeat sent right after it
is accepted. With clocks that run at the same rate, no two members ever believe they own the
same partition (tests/rebalance/test_member_properties.py, which found the SyncGroup case).
"""

from __future__ import annotations

from collections.abc import Mapping

from assignors.spec import TopicPartition
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, LeavingMember, SyncGroup
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    SyncGroupReply,
)
from rebalance.commands import OffsetCommit
from rebalance.errors import ErrorCode
from rebalance.member.actions import Action, Api, action_for
from rebalance.member.classic_membership import ClassicMembership, Reply, Request
from rebalance.member.embedded import EmbeddedProtocolError
from rebalance.member.lifecycle import MemberState, fire
from rebalance.member.messages import (
    Assigned,
    CommitOutcome,
    CommitRefused,
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    Revoked,
    TopicsDescribed,
)
from rebalance.replies import OffsetCommitReply


class ClassicMember(ClassicMembership):
    """One member of a classic group; see the module docstring."""

    # -- what the shell calls ----------------------------------------------------------------

    def next_wakeup_ms(self, now_ms: int) -> int | None:
        """When `poll` may have something to send without a reply, a `changes_done` or a
        `close` arriving first (None: nothing until then). Waking early is harmless."""
        if self.state in (MemberState.LEFT, MemberState.FAILED):
            return None
        candidates: list[int] = []
        lease_end = self._lease_end_ms()
        if self.owned and lease_end is not None:
            candidates.append(lease_end)
        if self._in_flight is None:
            settled = self._unacknowledged == 0 and not self._changes
            if (
                self.coordinator is None
                or self.state is MemberState.SYNCING
                or (self._closing and settled)
                or (
                    self._join_due() and (settled or (not self.protocol.cooperative and self.owned))
                )
            ):
                candidates.append(max(now_ms, self._retry_at_ms))
            if self._can_heartbeat():
                candidates.append(max(self._next_heartbeat_ms, self._retry_at_ms))
        return min(candidates) if candidates else None

    def on_reply(self, reply: Reply, now_ms: int) -> None:
        """The answer to the request in flight."""
        request, self._in_flight = self._in_flight, None
        if request is None:
            raise ValueError(f"no request in flight for {type(reply).__name__}")
        if self.state in (MemberState.LEFT, MemberState.FAILED):
            return
        if isinstance(request, FindCoordinator) and isinstance(reply, FindCoordinatorReply):
            self._on_find(reply, now_ms)
        elif isinstance(request, DescribeTopics) and isinstance(reply, TopicsDescribed):
            self._partition_counts = dict(reply.partitions)
        elif isinstance(request, JoinGroup) and isinstance(reply, JoinGroupReply):
            self._on_join(request, reply, now_ms)
        elif isinstance(request, SyncGroup) and isinstance(reply, SyncGroupReply):
            self._on_sync(request, reply, now_ms)
        elif isinstance(request, Heartbeat) and isinstance(reply, HeartbeatReply):
            self._on_heartbeat(request, reply, now_ms)
        elif isinstance(request, LeaveGroup) and isinstance(reply, LeaveGroupReply):
            fire(self, "left")  # whatever the answer: Java logs a leave error and goes on
        else:
            self._in_flight = request
            raise ValueError(f"{type(reply).__name__} does not answer {type(request).__name__}")

    def on_failure(self, now_ms: int) -> None:
        """The request in flight got no answer (connection lost, request timeout)."""
        request, self._in_flight = self._in_flight, None
        if request is None:
            return
        if isinstance(request, LeaveGroup):
            fire(self, "left")  # Java does not retry a leave either
            return
        self.coordinator = None
        self._retry_at_ms = now_ms + self.config.retry_backoff_ms
        if isinstance(request, SyncGroup):
            self._rejoin()  # Java: every SyncGroup failure requests a rejoin

    def commit(self, offsets: Mapping[TopicPartition, int], *, metadata: str = "") -> OffsetCommit:
        """An OffsetCommit fenced by this member's generation, for partitions it owns.

        Refused (CommitRefused) unless the member is in the generation that gave it these
        partitions: never with a generation it has already left or not yet been assigned in.
        While the member rejoins, before its JoinGroup is answered, the generation is still the
        coordinator's (it takes commits while preparing a rebalance, as Kafka's does); between
        the JoinGroup's answer and the SyncGroup's the refusal is retriable, as Java's
        RebalanceInProgressException.
        """
        if self.failure is not None:
            raise self.failure
        if self.generation < 0 or self.owned_generation < 0:
            raise CommitRefused(
                f"not in a synced generation (generation {self.generation}, "
                f"assignment of {self.owned_generation})",
                ErrorCode.ILLEGAL_GENERATION,
            )
        request = self._offset_commit(
            offsets,
            metadata,
            group_id=self.config.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.config.group_instance_id,
        )
        if self.generation != self.owned_generation:
            raise CommitRefused(
                f"rebalance in progress (generation {self.generation} joined, not yet synced)",
                ErrorCode.REBALANCE_IN_PROGRESS,
                retriable=True,
            )
        return request

    def on_commit_reply(self, request: OffsetCommit, reply: OffsetCommitReply) -> CommitOutcome:
        """Act on a commit's answer (Kafka: a stale answer must not reset a newer generation)."""
        errors = [
            code for _, parts in reply.topics for _, code in parts if code is not ErrorCode.NONE
        ]
        if not errors:
            return CommitOutcome(ErrorCode.NONE, None)
        error = errors[0]
        action = action_for(Api.OFFSET_COMMIT, error)
        current = request.generation_id == self.generation and request.member_id == self.member_id
        if action is Action.REDISCOVER:
            self.coordinator = None
        elif action is Action.REJOIN and self.state is MemberState.STABLE:
            self._rejoin()
        elif action in (Action.RESET_GENERATION, Action.RESET_MEMBER_ID):
            if not current or self.state in (MemberState.JOINING, MemberState.SYNCING):
                # Java's OffsetCommitResponseHandler: the generation moved on since the commit
                # was sent, or the member is rebalancing: RebalanceInProgressException, no
                # reset (the JoinGroup under way decides the membership). DIFFERS: Java sends
                # no commit while rejoining, so it cannot race a join completing; this member
                # does (the coordinator takes them until then). And Java says CommitFailed for
                # a moved-on generation once stable again; here always retriable, since what
                # owned() lists in the new generation may be committed.
                return CommitOutcome(error, action, rebalancing=True)
            self._reset(forget_member_id=action is Action.RESET_MEMBER_ID)
        elif action is Action.FATAL and current:
            self._fail(error, "OffsetCommit")
        return CommitOutcome(error, action)

    def on_commit_failure(self) -> None:
        """A commit got no answer: the coordinator may have moved."""
        self.coordinator = None

    # -- the protocol ----------------------------------------------------------------------------

    def _next_request(self, now_ms: int) -> Request | None:
        if self.coordinator is None:
            return FindCoordinator(self.config.group_id)
        if self._closing and self.state is MemberState.SYNCING:
            # DIFFERS: Java's close fails the revocation's commits mid-rebalance; here the member
            # first completes the rebalance under way (SyncGroup), so that `on_revoked` commits
            # in the generation the coordinator is in, then revokes and leaves.
            return self._sync_or_describe()
        if self._closing:
            leave = self._leave_request()
            if leave is not None or not self._can_heartbeat():
                return leave
            # the revocation callbacks still run: heartbeats keep the generation meanwhile
            if now_ms >= self._next_heartbeat_ms:
                return self._heartbeat_request()
            return None
        if self.state is MemberState.UNJOINED:
            fire(self, "join")
        if (
            self._pending is not None
            and self._can_heartbeat()
            and now_ms >= self._next_heartbeat_ms
        ):
            return self._heartbeat_request()  # confirms the generation before anything else
        if self.state is MemberState.STABLE and self._rejoin_needed:
            self._pending = None
            fire(self, "join")
        if self.state is MemberState.JOINING:
            if not self.protocol.cooperative and self.owned:
                self._announce(Revoked(self.owned, self.owned_generation), revoking=True)
                self.owned = frozenset()
            if self._unacknowledged == 0 and not self._changes:
                return self._join_request()
        if self.state is MemberState.SYNCING:
            return self._sync_or_describe()
        if self._can_heartbeat() and now_ms >= self._next_heartbeat_ms:
            return self._heartbeat_request()
        return None

    def _heartbeat_request(self) -> Heartbeat:
        return Heartbeat(
            self.config.group_id, self.generation, self.member_id, self.config.group_instance_id
        )

    def _join_request(self) -> JoinGroup:
        protocols = self.protocol.protocols(self.owned, self.previous, self.owned_generation)
        return JoinGroup(
            group_id=self.config.group_id,
            member_id=self.member_id,
            protocol_type=self.protocol.protocol_type,
            protocols=protocols,
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms,
            group_instance_id=self.config.group_instance_id,
            client_id=self.config.client_id,
        )

    def _sync_or_describe(self) -> DescribeTopics | SyncGroup:
        reply = self._join_reply
        assert reply is not None and self.protocol_name is not None
        assignments: dict[str, bytes] = {}
        if reply.leader == self.member_id and not reply.skip_assignment:
            if self._partition_counts is None:
                needed = self.protocol.topics_needed(self.protocol_name, reply.members)
                if needed:
                    return DescribeTopics(tuple(sorted(needed)))
                self._partition_counts = {}
            assignments = self.protocol.assign(
                self.protocol_name, reply.members, self._partition_counts
            )
        return SyncGroup(
            group_id=self.config.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            assignments=tuple(assignments.items()),
            group_instance_id=self.config.group_instance_id,
            protocol_type=self.protocol.protocol_type,
            protocol_name=self.protocol_name,
        )

    def _leave_request(self) -> LeaveGroup | None:
        self._pending = None
        if self.owned:
            if self.generation < 0 or self.member_id == "":
                self._announce(Lost(self.owned, self.owned_generation))
            else:
                self._announce(Revoked(self.owned, self.owned_generation), revoking=True)
            self.owned = frozenset()
        if self._unacknowledged or self._changes or self.state is MemberState.LEAVING:
            return None
        fire(self, "leave")
        if self.config.group_instance_id is not None or not self.member_id:
            # KIP-345: a static member does not leave on close; its session timeout removes it
            # (or its restart replaces it). A member without an id has nothing to leave.
            fire(self, "left")
            return None
        return LeaveGroup(self.config.group_id, (LeavingMember(self.member_id, None, "closing"),))

    def _on_find(self, reply: FindCoordinatorReply, now_ms: int) -> None:
        if reply.error is ErrorCode.NONE:
            self.coordinator = (reply.host, reply.port)
        elif reply.error is ErrorCode.GROUP_AUTHORIZATION_FAILED:
            self._fail(reply.error, "FindCoordinator")
        else:
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms

    def _on_join(self, request: JoinGroup, reply: JoinGroupReply, now_ms: int) -> None:
        if self.state is not MemberState.JOINING:
            return  # reset or closing meanwhile: the answer is stale
        if reply.error is ErrorCode.NONE:
            self.member_id = reply.member_id
            self.generation = reply.generation_id
            self.protocol_name = reply.protocol_name
            self.leader_id = reply.leader
            self._join_reply = reply
            self._partition_counts = None
            self._rejoin_needed = False
            fire(self, "joined")
            return
        action = action_for(Api.JOIN_GROUP, reply.error)
        if reply.error is ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = reply.member_id
        self._act(action, reply.error, "JoinGroup", now_ms)

    def _on_sync(self, request: SyncGroup, reply: SyncGroupReply, now_ms: int) -> None:
        if self.state is not MemberState.SYNCING or request.generation_id != self.generation:
            return  # reset, rejoining or closing meanwhile: the answer is stale
        if reply.error is ErrorCode.NONE:
            if (reply.protocol_type not in (None, self.protocol.protocol_type)) or (
                reply.protocol_name not in (None, self.protocol_name)
            ):
                self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "SyncGroup")
                return
            try:
                assigned = self.protocol.decode(reply.assignment)
            except EmbeddedProtocolError:
                self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "SyncGroup assignment")
                return
            revoked = self.owned - assigned
            if revoked:
                self._announce(Revoked(revoked, self.owned_generation), revoking=True)
                self._rejoin_needed = True  # KIP-429: the second rebalance hands them out
            self.owned -= revoked
            self.owned_generation = self.generation
            self.previous = tuple(sorted(assigned))
            # What is new is owned once a heartbeat of this generation is accepted: a SyncGroup
            # answered at once (group already Stable) does not re-arm the member's session at
            # the coordinator, so only that heartbeat proves the coordinator still counts it.
            self._pending = assigned - self.owned
            self._next_heartbeat_ms = now_ms
            fire(self, "synced")
            return
        self._act(action_for(Api.SYNC_GROUP, reply.error), reply.error, "SyncGroup", now_ms)

    def _on_heartbeat(self, request: Heartbeat, reply: HeartbeatReply, now_ms: int) -> None:
        self._next_heartbeat_ms = self._sent_ms + self.config.heartbeat_interval_ms
        unchanged = request.generation_id == self.generation and request.member_id == self.member_id
        if reply.error is ErrorCode.NONE:
            # STABLE, or JOINING while callbacks run before the JoinGroup: the generation holds
            if unchanged and self.state in (MemberState.STABLE, MemberState.JOINING):
                self._prove(self._sent_ms, settled=True)
                if self._pending is not None and self.state is MemberState.STABLE:
                    if self._pending:
                        self.owned |= self._pending
                        # DIFFERS: Java calls onPartitionsAssigned with an empty set too
                        self._announce(Assigned(self._pending, self.generation))
                    self._pending = None
            return
        if reply.error is ErrorCode.REBALANCE_IN_PROGRESS and unchanged:
            self._prove(self._sent_ms, settled=False)  # the session was re-armed, not the rest
        action = action_for(Api.HEARTBEAT, reply.error)
        if action is Action.REJOIN:
            if self.state is MemberState.STABLE:
                self._rejoin()  # otherwise already rejoining: Java ignores it
        elif action in (Action.RESET_GENERATION, Action.RESET_MEMBER_ID):
            if unchanged:
                self._reset(forget_member_id=action is Action.RESET_MEMBER_ID)
        else:
            self._next_heartbeat_ms = now_ms  # Java's failHeartbeat: retried after the backoff
            self._act(action, reply.error, "Heartbeat", now_ms)

    def _act(self, action: Action, error: ErrorCode, where: str, now_ms: int) -> None:
        """The generic part of the error table's actions for Join/Sync/Heartbeat."""
        if action is Action.REJOIN:
            self._rejoin()
        elif action is Action.RESET_GENERATION:
            self._reset(forget_member_id=False)
        elif action is Action.RESET_MEMBER_ID:
            self._reset(forget_member_id=True)
        elif action is Action.REDISCOVER:
            self.coordinator = None
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            if self.state is MemberState.SYNCING:
                self._rejoin()
        elif action is Action.BACKOFF:
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
        elif action is Action.FATAL:
            self._fail(error, where)
