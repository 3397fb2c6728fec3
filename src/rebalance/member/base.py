"""What the classic and the consumer-protocol members share: the sans-I/O contract's bookkeeping.

Both answer the shell the same way: one request in flight at a time, none while a backoff
runs or once the member is done, the ownership lease checked before anything is sent; the
assignment changes announced are taken by the shell, and the member goes on only once their
callbacks returned (`changes_done`). Each protocol says what to send (`_next_request`) and when
its lease runs out (`_check_lease`).

The ownership lease has two parts, as the coordinator has two deadlines for a member: its
session, re-armed by every heartbeat it accepts for the member's generation (or epoch), and the
rebalance (classic: the join deadline; KIP-848: the revocation deadline), which starts only
after the last heartbeat answered while no rebalance concerned the member. The lease ends at
the earlier of `session_ms` after the send time of the last accepted heartbeat and
`rebalance_ms` after the send time of the last settled one: a member whose `on_revoked` drains
for longer than its session keeps what it owns while it heartbeats, up to the rebalance timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

from assignors.spec import TopicPartition
from rebalance.commands import LATEST_COMMIT_VERSION, CommitPartition, CommitTopic, OffsetCommit
from rebalance.member.lifecycle import MemberState
from rebalance.member.messages import Change, CommitRefused, MemberFailed, Revoked

RequestT = TypeVar("RequestT")

DONE = (MemberState.LEAVING, MemberState.LEFT, MemberState.FAILED)
"""States past which no rebalance happens any more."""


class MemberBase(Generic[RequestT]):
    """The state both members keep, and the shell-facing calls whose rules they share."""

    def __init__(self, session_ms: int, rebalance_ms: int) -> None:
        self.state = MemberState.UNJOINED
        #: What this member believes it owns.
        self.owned: frozenset[TopicPartition] = frozenset()
        #: Announced as revoked, callbacks not done yet: still committable.
        self.revoking: frozenset[TopicPartition] = frozenset()
        self.coordinator: tuple[str, int] | None = None
        self.failure: MemberFailed | None = None
        self._session_ms = session_ms
        self._rebalance_ms = rebalance_ms
        self._in_flight: RequestT | None = None
        self._sent_ms = 0
        self._retry_at_ms = 0
        self._next_heartbeat_ms = 0
        #: When the last heartbeat the coordinator accepted was sent (None: no lease held).
        self._lease_from_ms: int | None = None
        #: When the last one accepted while no rebalance concerned the member was sent.
        self._settled_from_ms: int | None = None
        self._changes: list[Change] = []
        self._unacknowledged = 0
        self._closing = False

    def poll(self, now_ms: int) -> RequestT | None:
        """The request to send now, if any (it is then in flight until answered or failed)."""
        self._check_lease(now_ms)
        if self.state in (MemberState.LEFT, MemberState.FAILED) or self._in_flight is not None:
            return None
        if now_ms < self._retry_at_ms:
            return None
        request = self._next_request(now_ms)
        if request is not None:
            self._in_flight = request
            self._sent_ms = now_ms
            self._sending(request)
        return request

    def owns(self, now_ms: int) -> frozenset[TopicPartition]:
        """What the member may act on at `now_ms`, while its lease holds: what it owns, and what
        it is revoking until the `on_revoked` callback returned (`changes_done`)."""
        end = self._lease_end_ms()
        if end is None or now_ms >= end:
            return frozenset()
        return self.owned | self.revoking

    def _lease_end_ms(self) -> int | None:
        """When the ownership lease runs out (None: no lease held); see the module docstring."""
        if self._lease_from_ms is None or self._settled_from_ms is None:
            return None
        return min(
            self._lease_from_ms + self._session_ms, self._settled_from_ms + self._rebalance_ms
        )

    def _prove(self, sent_ms: int, *, settled: bool) -> None:
        """A heartbeat sent at `sent_ms` was accepted (`settled`: no rebalance concerned the
        member when it was answered): the lease counts from there."""
        self._lease_from_ms = sent_ms
        if settled:
            self._settled_from_ms = sent_ms

    def _drop_lease(self) -> None:
        self._lease_from_ms = self._settled_from_ms = None

    @property
    def has_changes(self) -> bool:
        """Changes announced and not yet taken."""
        return bool(self._changes)

    def take_changes(self) -> list[Change]:
        """Assignment changes to announce, in order; call `changes_done` once handled."""
        changes, self._changes = self._changes, []
        return changes

    def revocation_done(self, change: Revoked) -> None:
        """`on_revoked` for `change` returned: its partitions are no longer owned or committable
        (the member still waits for `changes_done` before it goes on with the protocol)."""
        self.revoking -= change.partitions

    def changes_done(self) -> None:
        """The application's callbacks for every taken change have returned."""
        self._unacknowledged = len(self._changes)
        # what later revocations, announced meanwhile and not yet handled, give back stays
        self.revoking = frozenset().union(
            *(c.partitions for c in self._changes if isinstance(c, Revoked))
        )

    def close(self) -> None:
        """Leave: revoke what is owned, then leave the group (classic: LeaveGroup, dynamic
        members only, as Kafka; consumer protocol: member epoch -1, or -2 when static)."""
        self._closing = True

    # -- for the protocols -----------------------------------------------------------------------

    def _next_request(self, now_ms: int) -> RequestT | None:
        raise NotImplementedError

    def _check_lease(self, now_ms: int) -> None:
        raise NotImplementedError

    def _sending(self, request: RequestT) -> None:
        """`request` leaves now (`_sent_ms` is set): note what it must prove when answered."""

    def _offset_commit(
        self,
        offsets: Mapping[TopicPartition, int],
        metadata: str,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
        version: int = LATEST_COMMIT_VERSION,
    ) -> OffsetCommit:
        """The OffsetCommit for `offsets`, refused for a partition this member neither owns nor
        is still revoking (what it gave back is committable until its callbacks returned)."""
        foreign = set(offsets) - self.owned - self.revoking
        if foreign:
            # DIFFERS: Kafka's coordinator takes any partition from a member of the generation;
            # here a commit is refused locally for what the member does not hold (no code).
            raise CommitRefused(f"not owned by this member: {sorted(foreign)}")
        by_topic: dict[str, list[CommitPartition]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                CommitPartition(partition, offset, metadata=metadata)
            )
        return OffsetCommit(
            group_id=group_id,
            topics=tuple(CommitTopic(t, tuple(ps)) for t, ps in by_topic.items()),
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            version=version,
        )

    def _announce(self, change: Change, *, revoking: bool = False) -> None:
        self._changes.append(change)
        self._unacknowledged += 1
        if revoking:
            self.revoking |= change.partitions
