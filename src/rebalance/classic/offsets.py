"""What offsets ask of a classic group (Kafka's `ClassicGroup.validateOffsetCommit`,
`isSubscribedToTopic`): who may commit, and which topics its members consume.

Commits are fenced by generation (spec §3.1): a commit carrying a member id or a generation must
come from a current member of the current generation; commits during AWAITING_SYNC get
REBALANCE_IN_PROGRESS; generation -1 commits to an empty group need no member at all (admin
tools and consumers with manual assignment).
"""

from __future__ import annotations

from assignors.consumer_protocol import ConsumerProtocolError, decode_subscription
from rebalance.classic.group import Group
from rebalance.classic.timers import session_key
from rebalance.commands import OffsetCommit
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.lifecycle import GroupState
from rebalance.state import CoordinatorState
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE


def validate_commit(
    state: CoordinatorState, result: Result, group: Group, cmd: OffsetCommit, now_ms: int
) -> None:
    """Raise the group-level error for a commit, or refresh the committer's session."""
    if cmd.generation_id < 0 and group.empty:
        return  # no member or instance validation (spec §3.1 rule 3)
    if cmd.generation_id >= 0 or cmd.member_id or cmd.group_instance_id is not None:
        member = group.validate_member(cmd.member_id, cmd.group_instance_id)
        if cmd.generation_id != group.generation:
            raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)
    else:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    if group.state is GroupState.AWAITING_SYNC:
        raise CoordinatorError(ErrorCode.REBALANCE_IN_PROGRESS)
    # Accepted in STABLE and JOINING (the previous generation may still commit): a commit
    # is proof of life, so it refreshes the member's session.
    state.schedule(
        result,
        session_key(group.group_id, member.member_id),
        now_ms + member.session_timeout_ms,
    )


def subscribed_topics(group: Group) -> set[str] | None:
    """Topics any member of a non-empty "consumer" protocol group subscribes to.

    None means "unknown": a non-consumer protocol, or metadata that cannot be parsed (which
    Kafka treats as subscribed to every topic).
    """
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for member in group.members.values():
            topics.update(decode_subscription(member.metadata_for(group.protocol_name)).topics)
    except (ConsumerProtocolError, KeyError):
        return None
    return topics
