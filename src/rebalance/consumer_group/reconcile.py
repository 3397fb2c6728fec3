"""One member's next step towards the target assignment (Kafka's `CurrentAssignmentBuilder`).

Revoke before assign, never two owners:

* partitions the member holds but the target takes away are *pending revocation*; while any are
  still owned by the client, the member stays at its epoch in UNREVOKED_PARTITIONS and is given
  nothing new (its reply lists only the partitions it keeps: the missing ones are the
  revocation — seed 001's StopFetcher);
* once the client's heartbeat shows it no longer owns them, the member advances to the target
  epoch and receives the target partitions that are free; a target partition still held by
  another member (assigned to it, or pending its revocation) is withheld, and the member waits in
  UNRELEASED_PARTITIONS until a later heartbeat finds it released;
* otherwise the member is STABLE at the target epoch.

Each partition keeps the epoch it was assigned at while the member keeps it, pending revocation
too; a partition it gains takes the target epoch (`assignment_epochs`, Kafka 4.3's KIP-1251).

The function is pure: the group applies the returned value through a record.
"""

from __future__ import annotations

from collections.abc import Callable

from rebalance.consumer_group.assignment_epochs import assign_at, member_by_epoch, sparse
from rebalance.consumer_group.group import ConsumerMember, MemberState, Partitions, freeze
from rebalance.consumer_group.records import CurrentAssignmentValue

#: (topic id, partition) -> the member holding it, or None when free.
OwnerOf = Callable[[str, int], str | None]
#: The ids of the topics the member subscribes to now (asked only when needed).
Subscribed = Callable[[], set[str]]


def next_assignment(
    member: ConsumerMember,
    target: Partitions,
    target_epoch: int,
    owner_of: OwnerOf,
    owned: Partitions | None,
    subscribed: Subscribed | None = None,
    subscription_changed: bool = False,
) -> CurrentAssignmentValue:
    """Where `member` goes now, given the target and what its heartbeat says it owns (None:
    the heartbeat did not say).

    As Kafka 4.1's (KAFKA-19431), a topic the member no longer subscribes to counts as not in
    its target, and a subscription change drops such topics at once even when the target is
    not recomputed yet (assignment batching): without `subscribed`, every target topic counts."""
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owned is None or _still_owns(owned, member.pending_revocation):
            if subscription_changed and subscribed is not None:
                return _drop_unsubscribed(member, subscribed(), owned)
            return member.current_value()  # still waiting for the client to revoke
        # Revoked: the member moves on to the next epoch (Kafka's `memberEpoch + 1`, at most
        # the target's), which it keeps if the target asks for more revocations meanwhile.
        epoch = min(member.member_epoch + 1, target_epoch)
        return _compute(member, epoch, target, target_epoch, owner_of, owned, subscribed)
    if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        if subscription_changed and subscribed is not None:
            return _drop_unsubscribed(member, subscribed(), owned)
        return member.current_value()
    return _compute(member, member.member_epoch, target, target_epoch, owner_of, owned, subscribed)


def _still_owns(owned: Partitions, revoking: Partitions) -> bool:
    return any(owned.get(t, set()) & ps for t, ps in revoking.items())


def _drop_unsubscribed(
    member: ConsumerMember, subscribed: set[str], owned: Partitions | None
) -> CurrentAssignmentValue:
    """Kafka's `updateCurrentAssignment`: the partitions of topics the member no longer
    subscribes to leave its assignment at its epoch; it revokes them if it still owns them."""
    assigned = {t: set(ps) for t, ps in member.assigned.items() if ps}
    dropped = {t: ps for t, ps in assigned.items() if t not in subscribed}
    if not dropped:
        return member.current_value()
    kept = {t: ps for t, ps in assigned.items() if t in subscribed}
    revoking = {t: set(ps) for t, ps in member.pending_revocation.items() if ps}
    for topic_id, partitions in dropped.items():
        revoking.setdefault(topic_id, set()).update(partitions)
    if owned is None or _still_owns(owned, revoking):
        state, pending = MemberState.UNREVOKED_PARTITIONS, revoking
    else:  # already given up: the assignment only shrinks
        state, pending = member.state, member.pending_revocation
    return CurrentAssignmentValue(
        member.member_id,
        member.member_epoch,
        member.previous_member_epoch,
        str(state),
        freeze(kept),
        freeze(pending),
        sparse(member_by_epoch(member), (kept, pending), member.member_epoch),
    )


def _compute(
    member: ConsumerMember,
    member_epoch: int,
    target: Partitions,
    target_epoch: int,
    owner_of: OwnerOf,
    owned: Partitions | None,
    subscribed: Subscribed | None,
) -> CurrentAssignmentValue:
    current = member.assigned
    topic_ids = None if subscribed is None else subscribed()
    kept: Partitions = {}
    revoking: Partitions = {}
    gaining: Partitions = {}
    unreleased = False
    for topic_id in sorted(set(current) | set(target)):
        now = current.get(topic_id, set())
        wanted = (
            target.get(topic_id, set()) if topic_ids is None or topic_id in topic_ids else set()
        )
        if now & wanted:
            kept[topic_id] = now & wanted
        if now - wanted:
            revoking[topic_id] = now - wanted
        free = set()
        for p in wanted - now:
            holder = owner_of(topic_id, p)
            if holder is None or holder == member.member_id:
                free.add(p)
            else:
                unreleased = True
        if free:
            gaining[topic_id] = free
    # Kept and revoking partitions keep the epoch they were assigned at (Kafka 4.3).
    epochs = member_by_epoch(member)
    # Kafka's `ownsRevokedPartitions`: a client that already dropped them need not be asked.
    if revoking and (owned is None or _still_owns(owned, revoking)):
        return CurrentAssignmentValue(
            member.member_id,
            member_epoch,
            # Kafka's `updateMemberEpoch`: every new state records the epoch it came from.
            member.member_epoch,
            str(MemberState.UNREVOKED_PARTITIONS),
            freeze(kept),
            freeze(revoking),
            sparse(epochs, (kept, revoking), member_epoch),
        )
    assign_at(epochs, target_epoch, gaining)
    for topic_id, partitions in gaining.items():
        kept.setdefault(topic_id, set()).update(partitions)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return CurrentAssignmentValue(
        member.member_id,
        target_epoch,
        member.member_epoch,
        str(state),
        freeze(kept),
        (),
        sparse(epochs, (kept,), target_epoch),
    )
