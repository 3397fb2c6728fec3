"""What offsets ask of a client-balance group: a node commits as itself, and each partition
only while it holds it (the fence Kafka's `CommitPartitionValidator` stands for)."""

from __future__ import annotations

from rebalance.client_balance.group import ClientBalanceGroup, TopicPartition
from rebalance.commands import OffsetCommit
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.group_types import CommitPartitionValidator


def validate_commit(
    group: ClientBalanceGroup, cmd: OffsetCommit
) -> CommitPartitionValidator | None:
    """The committer names its member id and its member epoch in the generation field;
    generation -1 commits to an empty group need no node and are not fenced."""
    if cmd.generation_id < 0 and group.empty:
        return None  # no member validation (spec §3.1 rule 3)
    node = group.nodes.get(cmd.member_id)
    if node is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    if cmd.generation_id != node.member_epoch:
        raise CoordinatorError(ErrorCode.STALE_MEMBER_EPOCH)
    member_id, member_epoch = cmd.member_id, cmd.generation_id

    def fence(topic: str, partition: int) -> ErrorCode:
        return commit_error(group, member_id, member_epoch, (topic, partition))

    return fence


def commit_error(
    group: ClientBalanceGroup, member_id: str, member_epoch: int, tp: TopicPartition
) -> ErrorCode:
    """The fence of one partition's commit: only the node incarnation that registered it
    may commit it (a node that released it, expired, or was replaced by a new incarnation
    of the same member id cannot). The answer is a Kafka code, FENCED_MEMBER_EPOCH, since
    it travels in OffsetCommit (TubeMQ's broker would answer with its own codes)."""
    holder = group.holders.get(tp)
    node = group.nodes.get(member_id)
    if holder == member_id and node is not None and node.member_epoch == member_epoch:
        return ErrorCode.NONE
    return ErrorCode.FENCED_MEMBER_EPOCH
