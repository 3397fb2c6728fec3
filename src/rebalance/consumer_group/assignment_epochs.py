"""The epoch at which each partition a member holds was assigned to it (KIP-1251, Kafka 4.3+).

Kafka's `ConsumerGroupMember` keeps, per partition assigned or pending revocation, the member
epoch at which the member received it (`assignedPartitions`: topic id -> partition -> epoch).
`CurrentAssignmentBuilder` keeps a partition's epoch while the member keeps the partition
(also when it moves to pending revocation), gives a newly assigned partition the target
assignment epoch, and a static member's temporary leave resets every epoch to 0. An
OffsetCommit at an older member epoch is accepted for a partition assigned at or before that
epoch (`ConsumerGroup.validateOffsetCommit`, `offsets.py`).

Records list only the partitions whose epoch is not the default, `max(member_epoch, 0)`, which
is also what Kafka's `Utils.assignmentFromTopicPartitions` gives a record without epochs: a
stable member reconciled at its own epoch writes nothing more than before.
"""

from __future__ import annotations

from collections.abc import Iterable

from rebalance.consumer_group.group import ConsumerMember, Partitions, freeze
from rebalance.consumer_group.records import PartitionEpochs

#: epoch -> the partitions held since that epoch: the working form of `PartitionEpochs`.
ByEpoch = dict[int, Partitions]


def default_epoch(member_epoch: int) -> int:
    """The epoch of a partition a record does not list (Kafka: `Math.max(memberEpoch, 0)`)."""
    return max(member_epoch, 0)


def by_epoch(member_epoch: int, epochs: PartitionEpochs, held: Iterable[Partitions]) -> ByEpoch:
    """Every partition of `held` under the epoch it was assigned at."""
    grouped: ByEpoch = {}
    listed: Partitions = {}
    for epoch, assignment in epochs:
        at = grouped.setdefault(epoch, {})
        for topic_id, listed_ps in assignment:
            at.setdefault(topic_id, set()).update(listed_ps)
            listed.setdefault(topic_id, set()).update(listed_ps)
    default = grouped.setdefault(default_epoch(member_epoch), {})
    for partitions in held:
        for topic_id, ps in partitions.items():
            rest = ps - listed[topic_id] if topic_id in listed else ps
            if rest:
                default.setdefault(topic_id, set()).update(rest)
    return grouped


def member_by_epoch(member: ConsumerMember) -> ByEpoch:
    return by_epoch(
        member.member_epoch, member.epochs, (member.assigned, member.pending_revocation)
    )


def assign_at(grouped: ByEpoch, epoch: int, gained: Partitions) -> None:
    """Record that the partitions of `gained` were (re)assigned at `epoch`."""
    for other, partitions in grouped.items():
        if other != epoch:
            for topic_id, ps in gained.items():
                if topic_id in partitions:
                    partitions[topic_id] -= ps
    at = grouped.setdefault(epoch, {})
    for topic_id, ps in gained.items():
        at.setdefault(topic_id, set()).update(ps)


def sparse(grouped: ByEpoch, held: Iterable[Partitions], member_epoch: int) -> PartitionEpochs:
    """The record form for a member at `member_epoch` holding `held`: its partitions whose
    epoch is not the default, grouped by epoch."""
    keep: Partitions = {}
    for partitions in held:
        for topic_id, ps in partitions.items():
            keep.setdefault(topic_id, set()).update(ps)
    default = default_epoch(member_epoch)
    pairs = []
    for epoch in sorted(grouped):
        if epoch == default:
            continue
        still = {t: ps & keep[t] for t, ps in grouped[epoch].items() if t in keep}
        frozen = freeze(still)
        if frozen:
            pairs.append((epoch, frozen))
    return tuple(pairs)


def rebased(member: ConsumerMember, member_epoch: int) -> PartitionEpochs:
    """`member`'s epochs as a record at `member_epoch` holding the same partitions lists them
    (a static member's replacement keeps its partitions' epochs under another member epoch)."""
    held = (member.assigned, member.pending_revocation)
    return sparse(member_by_epoch(member), held, member_epoch)


def epoch_of(member: ConsumerMember, topic_id: str, partition: int) -> int | None:
    """The epoch at which `member` received a partition it holds (None: it does not hold it,
    neither assigned nor pending revocation: Kafka's `assignmentEpoch`, then
    `pendingRevocationEpoch`)."""
    if partition not in member.assigned.get(topic_id, ()) and partition not in (
        member.pending_revocation.get(topic_id, ())
    ):
        return None
    for epoch, assignment in member.epochs:
        for listed_topic, partitions in assignment:
            if listed_topic == topic_id and partition in partitions:
                return epoch
    return default_epoch(member.member_epoch)
