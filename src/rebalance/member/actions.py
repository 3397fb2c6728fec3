"""What a member does about each error code: one table, as Kafka's Java client decides it.

The rows paraphrase the response handlers of the Java consumer (Apache Kafka 3.9/4.0):
`AbstractCoordinator` (JoinGroupResponseHandler, SyncGroupResponseHandler,
HeartbeatResponseHandler and the heartbeat thread's failure path, LeaveGroupResponseHandler),
`ConsumerCoordinator.OffsetCommitResponseHandler`, and for the consumer protocol
`ConsumerHeartbeatRequestManager.onErrorResponse` and `CommitRequestManager`. An error a
handler does not name falls to the API's default row (`DEFAULTS`), which is what Java's
"unexpected error" branch does for that API.

Actions:

* REJOIN: send a JoinGroup again at once, keeping member id and generation (the partitions
  are handled as for any rebalance: eager revokes everything, cooperative keeps what it owns).
* RESET_GENERATION: forget the generation but keep the member id, give up every partition as
  *lost* (`on_lost`), rejoin at once. Java: `resetStateAndGeneration(shouldResetMemberId=false)`;
  the consumer protocol's `transitionToFenced` (rejoin with epoch 0, same member id).
* RESET_MEMBER_ID: as RESET_GENERATION, and the member id goes too (the next join asks anew).
* REDISCOVER: the coordinator is unknown: FindCoordinator, then retry.
* BACKOFF: retry the same request after `retry_backoff_ms`.
* FATAL: stop; the error is raised to the application (the member leaves nothing behind to clean
  up: Java throws from poll() and the consumer is unusable for the group).
* IGNORE: nothing to do (LeaveGroup: the member is leaving anyway; a heartbeat's
  REBALANCE_IN_PROGRESS when the member is already rejoining).
* FAIL_COMMIT: this commit fails with the error, the membership is unaffected.
* RETRY_COMMIT: the commit is retried after the backoff (with the current generation or epoch,
  and only for partitions still owned).
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from rebalance.errors import ErrorCode as E


class Api(Enum):
    JOIN_GROUP = "JoinGroup"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    OFFSET_COMMIT = "OffsetCommit"
    CONSUMER_GROUP_HEARTBEAT = "ConsumerGroupHeartbeat"


class Action(Enum):
    REJOIN = "rejoin"
    RESET_GENERATION = "reset generation"
    RESET_MEMBER_ID = "reset member id"
    REDISCOVER = "rediscover coordinator"
    BACKOFF = "back off and retry"
    FATAL = "fatal"
    IGNORE = "ignore"
    FAIL_COMMIT = "fail the commit"
    RETRY_COMMIT = "retry the commit"


J, S, H, L, C, CH = (
    Api.JOIN_GROUP,
    Api.SYNC_GROUP,
    Api.HEARTBEAT,
    Api.LEAVE_GROUP,
    Api.OFFSET_COMMIT,
    Api.CONSUMER_GROUP_HEARTBEAT,
)

#: (api, error) -> action. Comments name the Java branch each row comes from.
ERROR_ACTIONS: Final[dict[tuple[Api, E], Action]] = {
    # JoinGroupResponseHandler
    (J, E.COORDINATOR_LOAD_IN_PROGRESS): Action.BACKOFF,  # "backoff and retry"
    (J, E.UNKNOWN_MEMBER_ID): Action.RESET_MEMBER_ID,  # resetStateAndGeneration(.., true)
    (J, E.COORDINATOR_NOT_AVAILABLE): Action.REDISCOVER,  # markCoordinatorUnknown
    (J, E.NOT_COORDINATOR): Action.REDISCOVER,
    (J, E.FENCED_INSTANCE_ID): Action.FATAL,  # "always treat this as a fatal error"
    (J, E.INCONSISTENT_GROUP_PROTOCOL): Action.FATAL,
    (J, E.INVALID_SESSION_TIMEOUT): Action.FATAL,
    (J, E.INVALID_GROUP_ID): Action.FATAL,
    (J, E.GROUP_AUTHORIZATION_FAILED): Action.FATAL,
    (J, E.GROUP_MAX_SIZE_REACHED): Action.FATAL,
    (J, E.UNSUPPORTED_VERSION): Action.FATAL,
    (J, E.MEMBER_ID_REQUIRED): Action.REJOIN,  # with the member id the response carries
    (J, E.REBALANCE_IN_PROGRESS): Action.REJOIN,  # "non-fatal ... Will retry"
    # SyncGroupResponseHandler (every error also requestRejoin()s)
    (S, E.GROUP_AUTHORIZATION_FAILED): Action.FATAL,
    (S, E.REBALANCE_IN_PROGRESS): Action.REJOIN,
    (S, E.FENCED_INSTANCE_ID): Action.FATAL,
    (S, E.UNKNOWN_MEMBER_ID): Action.RESET_MEMBER_ID,  # resetGenerationOnResponseError
    (S, E.ILLEGAL_GENERATION): Action.RESET_GENERATION,  # keeps the member id (Kafka 3.1+)
    (S, E.COORDINATOR_NOT_AVAILABLE): Action.REDISCOVER,
    (S, E.NOT_COORDINATOR): Action.REDISCOVER,
    # HeartbeatResponseHandler
    (H, E.COORDINATOR_NOT_AVAILABLE): Action.REDISCOVER,
    (H, E.NOT_COORDINATOR): Action.REDISCOVER,
    (H, E.REBALANCE_IN_PROGRESS): Action.REJOIN,  # in STABLE; ignored while rejoining
    (H, E.ILLEGAL_GENERATION): Action.RESET_GENERATION,  # if the generation is unchanged
    (H, E.UNKNOWN_MEMBER_ID): Action.RESET_MEMBER_ID,
    (H, E.FENCED_INSTANCE_ID): Action.FATAL,  # heartbeat thread: failed.set(e)
    # (H, GROUP_AUTHORIZATION_FAILED) and anything else: the heartbeat thread's onFailure
    # "else" branch, failHeartbeat() and retry after the backoff (the DEFAULTS row).
    # OffsetCommitResponseHandler
    (C, E.GROUP_AUTHORIZATION_FAILED): Action.FAIL_COMMIT,
    (C, E.TOPIC_AUTHORIZATION_FAILED): Action.FAIL_COMMIT,
    (C, E.OFFSET_METADATA_TOO_LARGE): Action.FAIL_COMMIT,
    (C, E.INVALID_COMMIT_OFFSET_SIZE): Action.FAIL_COMMIT,
    (C, E.COORDINATOR_LOAD_IN_PROGRESS): Action.RETRY_COMMIT,  # "just retry"
    (C, E.UNKNOWN_TOPIC_OR_PARTITION): Action.RETRY_COMMIT,
    (C, E.COORDINATOR_NOT_AVAILABLE): Action.REDISCOVER,  # then the commit is retriable
    (C, E.NOT_COORDINATOR): Action.REDISCOVER,
    (C, E.REQUEST_TIMED_OUT): Action.REDISCOVER,
    (C, E.FENCED_INSTANCE_ID): Action.FATAL,  # if the generation is unchanged
    (C, E.REBALANCE_IN_PROGRESS): Action.REJOIN,  # commit fails, requestRejoin, no reset
    (C, E.UNKNOWN_MEMBER_ID): Action.RESET_MEMBER_ID,  # CommitFailedException
    (C, E.ILLEGAL_GENERATION): Action.RESET_GENERATION,
    (C, E.STALE_MEMBER_EPOCH): Action.RETRY_COMMIT,  # CommitRequestManager: latest epoch
    # ConsumerHeartbeatRequestManager.onErrorResponse (KIP-848)
    (CH, E.NOT_COORDINATOR): Action.REDISCOVER,
    (CH, E.COORDINATOR_NOT_AVAILABLE): Action.REDISCOVER,
    (CH, E.COORDINATOR_LOAD_IN_PROGRESS): Action.BACKOFF,
    (CH, E.GROUP_AUTHORIZATION_FAILED): Action.FATAL,
    (CH, E.TOPIC_AUTHORIZATION_FAILED): Action.BACKOFF,  # reported, heartbeating continues
    (CH, E.INVALID_REQUEST): Action.FATAL,
    (CH, E.GROUP_MAX_SIZE_REACHED): Action.FATAL,
    (CH, E.UNSUPPORTED_ASSIGNOR): Action.FATAL,
    (CH, E.UNSUPPORTED_VERSION): Action.FATAL,
    (CH, E.UNRELEASED_INSTANCE_ID): Action.FATAL,
    (CH, E.FENCED_INSTANCE_ID): Action.FATAL,
    (CH, E.INVALID_REGULAR_EXPRESSION): Action.FATAL,
    (CH, E.FENCED_MEMBER_EPOCH): Action.RESET_GENERATION,  # transitionToFenced: epoch 0
    (CH, E.UNKNOWN_MEMBER_ID): Action.RESET_GENERATION,  # transitionToFenced, same id
}

#: What an error no row names leads to, per API (Java's "unexpected error" branches).
DEFAULTS: Final[dict[Api, Action]] = {
    J: Action.FATAL,  # KafkaException("Unexpected error in join group response")
    S: Action.FATAL,  # KafkaException("Unexpected error from SyncGroup")
    H: Action.BACKOFF,  # heartbeat thread: failHeartbeat(), retried
    L: Action.IGNORE,  # LeaveGroup: logged; the member is gone either way
    C: Action.FAIL_COMMIT,  # KafkaException("Unexpected error in commit")
    CH: Action.FATAL,  # handleFatalFailure for unknown errors
}


def action_for(api: Api, code: E) -> Action:
    """The action Kafka's Java client takes when `api` answers with `code` (not NONE)."""
    if code is E.NONE:
        raise ValueError("NONE is success, not an error to act on")
    return ERROR_ACTIONS.get((api, code), DEFAULTS[api])
