"""What offsets ask of a consumer group (Kafka 4.4's `ConsumerGroup.validateOffsetCommit`,
`validateOffsetFetch`, `isSubscribedToTopic`)."""

from __future__ import annotations

from rebalance.commands import OffsetCommit, OffsetFetch
from rebalance.consumer_group.assignment_epochs import epoch_of
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.group_types import CommitPartitionValidator
from rebalance.topics import TopicMetadata


def validate_commit(
    group: ConsumerGroup, cmd: OffsetCommit, metadata: TopicMetadata
) -> CommitPartitionValidator | None:
    """Kafka 4.4's check: the committer must be a member, a KIP-848 member must commit with
    v9+, and carry its current member epoch or an older one (KIP-1251): then every partition
    committed must be one it holds, assigned at or before that epoch, else the whole commit
    fails. A classic-protocol member (online migration) commits as in a classic group, its
    generation its member epoch, the same fence answering ILLEGAL_GENERATION. Generation -1
    commits to an empty group need no member."""
    if cmd.generation_id < 0 and group.empty:
        return None  # no member validation (spec §3.1 rule 3)
    member = group.members.get(cmd.member_id)
    if member is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    classic = member.classic is not None
    if not classic and cmd.version < 9:
        raise CoordinatorError(ErrorCode.UNSUPPORTED_VERSION)
    epoch = cmd.generation_id
    if epoch == member.member_epoch:
        return None
    code = ErrorCode.ILLEGAL_GENERATION if classic else ErrorCode.STALE_MEMBER_EPOCH
    if epoch > member.member_epoch:
        raise CoordinatorError(
            code,
            f"Received member epoch {epoch} is newer than current member epoch "
            f"{member.member_epoch}.",
        )

    def fence(topic: str, partition: int) -> ErrorCode:
        """Kafka's `createAssignmentEpochValidator`; it throws, failing the whole commit."""
        info = metadata.topics.get(topic)
        since = None if info is None else epoch_of(member, info.topic_id, partition)
        if since is None:
            raise CoordinatorError(
                code,
                f"Partition {topic}-{partition} is not assigned or pending revocation for member.",
            )
        if epoch < since:
            raise CoordinatorError(
                code,
                f"Received member epoch {epoch} is older than assignment epoch {since} "
                f"for partition {topic}-{partition}.",
            )
        return ErrorCode.NONE

    return fence


def validate_fetch(group: ConsumerGroup, cmd: OffsetFetch) -> None:
    """OffsetFetch v9+: a fetch naming no member (member id null, epoch -1: admin clients,
    classic consumers, librdkafka) is answered; one naming a member must name a current member
    with its current epoch. The error is the group's (OffsetFetch v8+ has a per-group error
    code), no partitions answered."""
    if cmd.member_id is None and cmd.member_epoch < 0:
        return
    member = group.members.get(cmd.member_id or "")
    if member is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    if cmd.member_epoch != member.member_epoch:
        raise CoordinatorError(ErrorCode.STALE_MEMBER_EPOCH)


def subscribed_topics(group: ConsumerGroup) -> set[str]:
    """The topics its group epoch was computed for: names and regex matches that exist."""
    return {name for name, _, _ in group.subscribed_metadata}
