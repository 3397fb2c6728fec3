"""One ConsumerGroupHeartbeat, in Kafka's order (`GroupMetadataManager.consumerGroupHeartbeat`):

1. validate the request (`validation.py`);
2. find the group and the member (`membership.py`), or handle a leave (`departure.py`);
3. apply a changed subscription; bump the group epoch when the membership, a subscription or
   the metadata of the subscribed topics changed, and bring the target up to it (`epochs.py`);
4. reconcile this member one step and answer with its epoch and, when it changed or the request
   was a full one, its assignment; its session runs again from now.
"""

from __future__ import annotations

from collections.abc import Hashable

from rebalance.consumer_group.commands import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeat,
)
from rebalance.consumer_group.departure import leave
from rebalance.consumer_group.epochs import maybe_bump, reconcile
from rebalance.consumer_group.group import freeze, thaw
from rebalance.consumer_group.membership import find_group, find_member, update_subscription
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.consumer_group.timers import consumer_session_key
from rebalance.consumer_group.validation import validate
from rebalance.effects import Result, single_reply
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.state import CoordinatorState
from rebalance.topics import TopicMetadata


def heartbeat(
    state: CoordinatorState,
    metadata: TopicMetadata,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
    token: Hashable,
) -> Result:
    """Answer `cmd`: an error reply changes nothing (every check runs before any record)."""
    result = Result()
    try:
        validate(cmd, state.config)
        reply = _heartbeat(state, metadata, result, cmd, now_ms)
    except CoordinatorError as exc:
        # Kafka's error answer (GroupCoordinatorService.consumerGroupHeartbeat's
        # handleOperationException) carries only the error code and message: no member id,
        # epoch and heartbeat interval 0 (checked against Kafka 4.4).
        return single_reply(token, ConsumerGroupHeartbeatReply(exc.code, exc.message or None))
    result.reply(token, reply)
    return result


def _heartbeat(
    state: CoordinatorState,
    metadata: TopicMetadata,
    result: Result,
    cmd: ConsumerGroupHeartbeat,
    now_ms: int,
) -> ConsumerGroupHeartbeatReply:
    group = find_group(state, metadata, result, cmd, now_ms)
    if cmd.member_epoch == LEAVE_EPOCH or cmd.member_epoch == STATIC_LEAVE_EPOCH:
        return leave(state, metadata, result, group, cmd, now_ms)
    member, trigger = find_member(state, result, group, cmd, now_ms)
    resubscribed = update_subscription(state, result, group, member, cmd)
    trigger = resubscribed or trigger
    # Without a join or a subscription change, the subscribed topics' metadata is checked only
    # when `topics_changed` or a load asked for it (Kafka's `hasMetadataExpired`): a plain
    # heartbeat skips that check (it walks every member: quadratic over a round of heartbeats).
    maybe_bump(
        state,
        metadata,
        result,
        group,
        trigger,
        now_ms,
        check_metadata=trigger is not None or group.metadata_refresh,
    )
    before = member.current_value()
    owned = None if cmd.topic_partitions is None else thaw(cmd.topic_partitions)
    reconcile(
        state,
        result,
        group,
        member,
        owned,
        now_ms,
        metadata,
        subscription_changed=resubscribed is not None,
    )
    state.schedule(
        result,
        consumer_session_key(group.group_id, member.member_id),
        now_ms + state.config.group_consumer_session_timeout_ms,
    )
    # Kafka's `isFullRequest`: a join, or the rebalance timeout, the topic names and the owned
    # partitions all set (a regex does not stand in for the names, even in Kafka 4.x).
    full = cmd.member_epoch == JOIN_EPOCH or (
        cmd.rebalance_timeout_ms != -1
        and cmd.subscribed_topic_names is not None
        and cmd.topic_partitions is not None
    )
    changed = before.assigned != freeze(member.assigned)
    return ConsumerGroupHeartbeatReply(
        ErrorCode.NONE,
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        heartbeat_interval_ms=state.config.group_consumer_heartbeat_interval_ms,
        assignment=freeze(member.assigned) if full or changed else None,
    )
