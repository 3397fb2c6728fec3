"""Kafka's checks of a ConsumerGroupHeartbeat before any group is touched
(`GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid`), with its messages."""

from __future__ import annotations

import re

from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.commands import (
    CLIENT_MEMBER_ID_VERSION,
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeat,
)
from rebalance.errors import CoordinatorError, ErrorCode


def _blank(value: str | None) -> bool:
    """Kafka's `throwIfEmptyString`: present but empty after trimming."""
    return value is not None and not value.strip()


def _invalid(message: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.INVALID_REQUEST, message)


def validate(cmd: ConsumerGroupHeartbeat, config: CoordinatorConfig) -> None:
    """Raise the request's error (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR,
    INVALID_REGULAR_EXPRESSION) with Kafka's message, or return."""
    epoch = cmd.member_epoch
    if (
        cmd.version >= CLIENT_MEMBER_ID_VERSION or epoch > 0 or epoch == LEAVE_EPOCH
    ) and not cmd.member_id.strip():
        raise _invalid("MemberId can't be empty.")
    if not cmd.group_id.strip():
        raise _invalid("GroupId can't be empty.")
    if _blank(cmd.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if _blank(cmd.rack_id):
        raise _invalid("RackId can't be empty.")
    if epoch == JOIN_EPOCH:
        if cmd.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if cmd.topic_partitions is None or cmd.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if cmd.subscribed_topic_names is None and cmd.subscribed_topic_regex is None:
            raise _invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining."
            )
    elif epoch == STATIC_LEAVE_EPOCH:
        if cmd.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    if cmd.subscribed_topic_regex:
        try:
            re.compile(cmd.subscribed_topic_regex)
        except re.error as exc:
            raise CoordinatorError(
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{cmd.subscribed_topic_regex}` is not a valid regular "
                f"expression: {exc}.",
            ) from None
    assignors = config.group_consumer_assignors
    if cmd.server_assignor is not None and cmd.server_assignor not in assignors:
        raise CoordinatorError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {cmd.server_assignor} is not supported. Supported assignors: "
            f"{', '.join(assignors)}.",
        )
