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
and rejoins; round two finds it unowned and hands it out. Nothing is ever revoked and assigned in
one round.

Round two must not itself move partitions again, or the group never settles. The engine does not
promise that: with unequal subscriptions or racks, where it places partitions depends on which
ones are free, so round two (the withheld partitions now free, their old owners holding fewer)
may pick another target and withhold other partitions, round after round (with KIP-881 racks and
unequal subscriptions the assignor sweep found groups that never settled). So round one runs
round two itself, on what the members will send: their subscriptions, with round one's result as
owned partitions. If that run would move a partition, round one revokes it now as well and runs
it again; once it moves nothing, the real round two (the same pure computation on the same input)
keeps everything and hands out all that is left out, and the group settles in two rounds. A
partition left out this way may be one nobody owned; that is safe because the loop only runs when
round one revokes something, and the revoking members' rejoin is what starts round two. The check
is skipped where the engine proves round two keeps everything (`BalanceOutcome.next_round_stable`:
equal subscriptions, no racks), so that common case costs one balancing run per round as before.

KIP-54's example: C0, C1, C2 subscribe to t0..t3 (2 partitions each); after C1 leaves only C1's
partitions move. Second example, unequal subscriptions t0(1), t1(2), t2(3), C0{t0}, C1{t0,t1},
C2{t0,t1,t2}: C0 [t0-0], C1 [t1-0, t1-1], C2 [t2-0, t2-1, t2-2]; when C0 leaves, C1 takes t0-0 and
C2 keeps everything.
"""

from __future__ import annotations

from dataclasses import replace

from .balance import balance
from .spec import GroupAssignment, GroupSpec, TopicDescriber, TopicPartition

_MAX_CHECKS = 32
"""Next-round checks per call. Each revokes what round two would still move; one usually settles
it, but with racks and unequal subscriptions each revocation can shift the next target a little,
and large groups can need dozens. The bound caps the leader's work: past it round one returns
what it has, round two may take a few more partitions from their owners, and a third round
follows."""


class StickyAssignor:
    """Eager sticky: balance first, then keep as many current owners as possible."""

    sorted_output = True
    """Returns fresh lists sorted by (topic, partition); `assignors.assign` relies on it."""

    def __init__(self, *, rack_aware: bool = True) -> None:
        self._rack_aware = rack_aware

    @property
    def name(self) -> str:
        return "sticky"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        return balance(spec, topics, rack_aware=self._rack_aware).assignment


class CooperativeStickyAssignor:
    """Cooperative sticky: as sticky, but partitions still owned elsewhere are withheld."""

    sorted_output = True
    """Returns fresh lists sorted by (topic, partition); `assignors.assign` relies on it."""

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
        if not outcome.transferring or outcome.next_round_stable:
            return assignment  # nothing left out, or round two provably keeps all of it
        for _ in range(_MAX_CHECKS):
            following = balance(_next_round(spec, assignment), topics, rack_aware=self._rack_aware)
            if not following.transferring:
                break
            # round two would take these from their holders: they are left out now instead
            taken = {tp for tps in following.transferring.values() for tp in tps}
            assignment = {
                member_id: [tp for tp in tps if tp not in taken]
                for member_id, tps in assignment.items()
            }
        return assignment


def _next_round(spec: GroupSpec, assignment: GroupAssignment) -> GroupSpec:
    """The spec the members will send next round: same members, ``assignment`` as owned.

    They all rejoin with the generation of this round's assignment; one shared value stands in
    for it (claims from one assignment never overlap, so only equality could matter).
    """
    known = [m.generation for m in spec.members.values() if m.generation is not None]
    generation = max(known, default=-1) + 1
    owned: dict[str, tuple[TopicPartition, ...]] = {
        member_id: tuple(tps) for member_id, tps in assignment.items()
    }
    return GroupSpec(
        {
            member_id: replace(member, owned=owned.get(member_id, ()), generation=generation)
            for member_id, member in spec.members.items()
        }
    )
