"""What the classic and the consumer-protocol members share: the sans-I/O contract's bookkeeping.

Both answer the shell the same way: one request in flight at a time, none while a backoff
runs or once the member is done, the ownership lease checked before anything is sent; the
assignment changes announced are taken by the shell, and the member goes on only once their
callbacks returned (`changes_done`). Each protocol says what to send (`_next_request`) and when
its lease runs out (`_check_lease`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

from assignors.spec import TopicPartition
from rebalance.commands import LATEST_COMMIT_VERSION, CommitPartition, CommitTopic, OffsetCommit
from rebalance.member.lifecycle import MemberState
from rebalance.member.messages import Change, CommitRefused, MemberFailed

RequestT = TypeVar("RequestT")

DONE = (MemberState.LEAVING, MemberState.LEFT, MemberState.FAILED)
"""States past which no rebalance happens any more."""


class MemberBase(Generic[RequestT]):
    """The state both members keep, and the shell-facing calls whose rules they share."""

    def __init__(self, lease_ms: int) -> None:
        self.state = MemberState.UNJOINED
        #: What this member believes it owns.
        self.owned: frozenset[TopicPartition] = frozenset()
        #: Announced as revoked, callbacks not done yet: still committable.
        self.revoking: frozenset[TopicPartition] = frozenset()
        self.coordinator: tuple[str, int] | None = None
        self.failure: MemberFailed | None = None
        self._lease_ms = lease_ms
        self._in_flight: RequestT | None = None
        self._sent_ms = 0
        self._retry_at_ms = 0
        self._next_heartbeat_ms = 0
        #: When the last proof of membership was sent (None: the member holds no lease).
        self._lease_from_ms: int | None = None
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
        """What the member may act on at `now_ms`: its partitions while the lease holds."""
        if self._lease_from_ms is None or now_ms >= self._lease_from_ms + self._lease_ms:
            return frozenset()
        return self.owned

    @property
    def has_changes(self) -> bool:
        """Changes announced and not yet taken."""
        return bool(self._changes)

    def take_changes(self) -> list[Change]:
        """Assignment changes to announce, in order; call `changes_done` once handled."""
        changes, self._changes = self._changes, []
        return changes

    def changes_done(self) -> None:
        """The application's callbacks for every taken change have returned."""
        self._unacknowledged = len(self._changes)
        self.revoking = frozenset()

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
