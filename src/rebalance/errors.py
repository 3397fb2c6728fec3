"""Kafka error codes and the one exception type the core raises for protocol outcomes.

Handlers answer requests with an `ErrorCode`; internally they use `CoordinatorError` for early
returns of the validation ladder (unknown member, generation fence, ...), so the code that maps
outcomes to reply fields exists in one place per request type.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """Kafka's numeric error codes (`org.apache.kafka.common.protocol.Errors`) used by groups."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    KAFKA_STORAGE_ERROR = 56
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128
    # -- TubeMQ's codes (`TErrCodeConstants`), answered only by the client-balance group type's
    # extension APIs and per partition in its commits (`rebalance.client_balance`). Kafka's
    # codes stop well below 400, so the two sets never meet.
    BAD_REQUEST = 400
    NOT_FOUND = 404
    PARTITION_OCCUPIED = 410
    HB_NO_NODE = 411
    DUPLICATE_PARTITION = 412
    PARTITION_UNSUBSCRIBABLE = 422
    CLIENT_INCONSISTENT_CONSUMETYPE = 424
    CLIENT_INCONSISTENT_TOPICSET = 425
    CLIENT_INCONSISTENT_SOURCECOUNT = 429
    CLIENT_DUPLICATE_INDEXID = 430


class CoordinatorError(Exception):
    """A request outcome other than success, carrying the Kafka error code to answer with."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(f"{code.name}: {message}" if message else code.name)
        self.code = code
        self.message = message


class IllegalTransition(Exception):
    """A lifecycle trigger fired in a state that does not allow it (an internal bug, never a
    client's fault): the group's state is left unchanged."""
