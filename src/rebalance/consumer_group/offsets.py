"""What offsets ask of a consumer group (Kafka's `ConsumerGroup.validateOffsetCommit`,
`validateOffsetFetch`, `isSubscribedToTopic`)."""

from __future__ import annotations

from rebalance.commands import OffsetCommit, OffsetFetch
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.errors import CoordinatorError, ErrorCode


def validate_commit(group: ConsumerGroup, cmd: OffsetCommit) -> None:
    """The committer must be a member, commit with v9+ (members of this protocol do), and carry
    its current member epoch; generation -1 commits to an empty group need no member."""
    if cmd.generation_id < 0 and group.empty:
        return  # no member validation (spec §3.1 rule 3)
    member = group.members.get(cmd.member_id)
    if member is None:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    if member.classic is not None:
        # A classic-protocol member (online migration) commits as in a classic group: any
        # version, its generation is its member epoch.
        if cmd.generation_id != member.member_epoch:
            raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)
        return
    if cmd.version < 9:
        raise CoordinatorError(ErrorCode.UNSUPPORTED_VERSION)
    if cmd.generation_id != member.member_epoch:
        raise CoordinatorError(ErrorCode.STALE_MEMBER_EPOCH)


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
