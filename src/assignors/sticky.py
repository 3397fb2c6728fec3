"""Kafka's StickyAssignor ("sticky") and CooperativeStickyAssignor ("cooperative-sticky").

Both run the balanced sticky engine of `assignors.balance` on the members' owned partitions and
generations; they differ in how a partition changes hands.

*sticky* is eager: before joining, every member gives up everything, so the result may move a
partition straight from one member to another. The current assignment arrives through the
members' user data (previous assignment + generation, KIP-54/KIP-341), which the protocol
adapters decode into `MemberSubscription.owned` and ``generation``.

*cooperative-sticky* (KIP-429) keeps consuming owned partitions across the rebalance, so a
partition may never be assigned in the same round in which another member still owns it. Round
one withholds every such partition: its owner sees it missing from its new assignment, revokes it
and rejoins; round two finds it unowned and hands it out (the engine normally picks the same
target). Nothing is ever revoked and assigned in one round.

KIP-54's example: C0, C1, C2 subscribe to t0..t3 (2 partitions each); after C1 leaves only C1's
partitions move. Second example, unequal subscriptions t0(1), t1(2), t2(3), C0{t0}, C1{t0,t1},
C2{t0,t1,t2}: C0 [t0-0], C1 [t1-0, t1-1], C2 [t2-0, t2-1, t2-2]; when C0 leaves, C1 takes t0-0 and
C2 keeps everything.
"""

from __future__ import annotations

from .balance import balance
from .spec import GroupAssignment, GroupSpec, TopicDescriber


class StickyAssignor:
    """Eager sticky: balance first, then keep as many current owners as possible."""

    def __init__(self, *, rack_aware: bool = True) -> None:
        self._rack_aware = rack_aware

    @property
    def name(self) -> str:
        return "sticky"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        return balance(spec, topics, rack_aware=self._rack_aware).assignment


class CooperativeStickyAssignor:
    """Cooperative sticky: as sticky, but partitions still owned elsewhere are withheld."""

    def __init__(self, *, rack_aware: bool = True) -> None:
        self._rack_aware = rack_aware

    @property
    def name(self) -> str:
        return "cooperative-sticky"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        outcome = balance(spec, topics, rack_aware=self._rack_aware)
        assignment = outcome.assignment
        for member_id, moving in outcome.transferring.items():
            withheld = set(moving)
            assignment[member_id] = [tp for tp in assignment[member_id] if tp not in withheld]
        return assignment
