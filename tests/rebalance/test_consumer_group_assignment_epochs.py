"""Assignment epochs (KIP-1251, Kafka 4.3+): each partition a KIP-848 member holds remembers the
member epoch at which it was assigned, and an OffsetCommit at an older member epoch is accepted
for a partition held since then, as Kafka 4.4's `ConsumerGroup.validateOffsetCommit` does.
The same rule, asked of the real broker, is in tests/coordinator/conformance/test_kip848_kafka.py
(`test_a_commit_at_an_older_member_epoch_...`)."""

from __future__ import annotations

import json

from consumer_harness import Client, ConsumerHarness, topic_id

from coordinator.groups.record_codec import decode, encode
from coordinator.groups.store.base import StoredRecord
from rebalance.commands import CommitPartition, CommitTopic, OffsetCommit
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.records import ConsumerGroupRecord, CurrentAssignmentValue
from rebalance.errors import ErrorCode
from rebalance.replies import OffsetCommitReply

G = "g"
T = topic_id("t")


def commit(h: ConsumerHarness, member: str, epoch: int, *partitions: int) -> list[ErrorCode]:
    topics = (CommitTopic("t", tuple(CommitPartition(p, 7) for p in partitions)),)
    reply = h.reply(h.send(OffsetCommit(G, topics, epoch, member)))
    assert isinstance(reply, OffsetCommitReply)
    return [code for _, code in reply.topics[0][1]]


def reconciled_pair() -> tuple[ConsumerHarness, Client, Client]:
    """a held t-0 and t-1 from epoch 2; b joined (epoch 3) and a, having revoked t-1, moved on
    to epoch 3 keeping t-0, which it has held since epoch 2."""
    h = ConsumerHarness(t=2)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    assert a.heartbeat().member_epoch == 2
    assert b.heartbeat().member_epoch == 3
    a.heartbeat()  # told to revoke t-1
    assert a.heartbeat().member_epoch == 3 and a.owned == {T: {0}}
    return h, a, b


def test_a_commit_at_an_older_epoch_passes_for_a_partition_held_since_then() -> None:
    h, _, _ = reconciled_pair()
    assert h.group(G).members["a"].epochs == ((2, ((T, (0,)),)),)
    assert commit(h, "a", 2, 0) == [ErrorCode.NONE]
    assert commit(h, "a", 3, 0) == [ErrorCode.NONE]


def test_it_fails_whole_for_a_partition_not_held_or_assigned_later() -> None:
    h, _, _ = reconciled_pair()
    # t-1 went to b: an older epoch names a partition a no longer holds, and the whole commit
    # fails, t-0 with it (Kafka's validator throws).
    assert commit(h, "a", 2, 0, 1) == [ErrorCode.STALE_MEMBER_EPOCH] * 2
    # Older than the epoch t-0 was assigned at, or newer than the member's: refused.
    assert commit(h, "a", 1, 0) == [ErrorCode.STALE_MEMBER_EPOCH]
    assert commit(h, "a", 4, 0) == [ErrorCode.STALE_MEMBER_EPOCH]
    assert ("t", 0) not in h.group(G).offsets


def test_a_gained_partition_carries_the_target_epoch() -> None:
    h, _, b = reconciled_pair()
    assert b.heartbeat().member_epoch == 3 and b.owned == {T: {1}}
    assert h.group(G).members["b"].epochs == ()  # at its own epoch, 3: the record lists none
    assert commit(h, "b", 2, 1) == [ErrorCode.STALE_MEMBER_EPOCH]


def test_the_epochs_survive_a_coordinator_move() -> None:
    h, _, _ = reconciled_pair()
    h.failover()
    assert commit(h, "a", 2, 0) == [ErrorCode.NONE]
    assert commit(h, "a", 1, 0) == [ErrorCode.STALE_MEMBER_EPOCH]


def test_a_static_members_temporary_leave_resets_its_epochs_to_zero() -> None:
    # Kafka's `consumerGroupStaticMemberGroupLeave`: `resetAssignedPartitionsEpochsToZero`.
    h = ConsumerHarness(t=1)
    h.join(G, "a", instance_id="i")
    assert h.hb(ConsumerGroupHeartbeat(G, "a", -2, instance_id="i")).member_epoch == -2
    back = h.join(G, "a2", instance_id="i")
    assert back.member_epoch == 2
    assert h.group(G).members["a2"].epochs == ((0, ((T, (0,)),)),)
    assert commit(h, "a2", 1, 0) == [ErrorCode.NONE]


def test_the_record_keeps_the_epochs_and_an_older_row_reads_at_the_member_epoch() -> None:
    value = CurrentAssignmentValue("a", 3, 2, "stable", ((T, (0, 1)),), (), ((2, ((T, (0,)),)),))
    row = encode(ConsumerGroupRecord(G, value))
    assert decode(row) == ConsumerGroupRecord(G, value)
    # A row written before assignment epochs: no "epochs" field, every partition at the
    # member epoch, as Kafka reads a record without AssignmentEpochs.
    body = json.loads(row.value or b"")
    del body["epochs"]
    older = decode(StoredRecord(row.kind, row.key, json.dumps(body).encode()))
    assert older == ConsumerGroupRecord(
        G, CurrentAssignmentValue("a", 3, 2, "stable", ((T, (0, 1)),), ())
    )
