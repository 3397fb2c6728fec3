"""The classic group's timer kinds and keys (Kafka's `classicGroupJoinKey`, `...SyncKey`,
`...HeartbeatKey`; the core's key shape is `rebalance.timers.TimerKey`)."""

from __future__ import annotations

from rebalance.timers import TimerKey

SESSION = "session"  # a member's heartbeat/session expiry
PENDING = "pending"  # a MEMBER_ID_REQUIRED id that has not joined yet
JOIN = "join"  # rebalance timeout, or the initial rebalance delay
SYNC = "sync"  # members of a new generation that have not sent SyncGroup


def session_key(group_id: str, member_id: str) -> TimerKey:
    return (SESSION, group_id, member_id)


def pending_key(group_id: str, member_id: str) -> TimerKey:
    return (PENDING, group_id, member_id)


def join_key(group_id: str) -> TimerKey:
    return (JOIN, group_id, "")


def sync_key(group_id: str) -> TimerKey:
    return (SYNC, group_id, "")
