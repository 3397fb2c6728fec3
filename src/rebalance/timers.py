"""Timer keys: what the core asks the shell to wake it for.

A key is a `(kind, group id, member id or "")` tuple: hashable, nothing to parse back. The shell
arms one timer per key (a new deadline replaces the old one) and calls `on_timer(key, now_ms)`
when it fires; the core drops firings whose deadline it no longer holds.
"""

from __future__ import annotations

TimerKey = tuple[str, str, str]

SESSION = "session"  # a member's heartbeat/session expiry
PENDING = "pending"  # a MEMBER_ID_REQUIRED id that has not joined yet
JOIN = "join"  # rebalance timeout, or the initial rebalance delay
SYNC = "sync"  # members of a new generation that have not sent SyncGroup
RETENTION = "retention"  # periodic offset expiry of one partition (member field: partition)


def session_key(group_id: str, member_id: str) -> TimerKey:
    return (SESSION, group_id, member_id)


def pending_key(group_id: str, member_id: str) -> TimerKey:
    return (PENDING, group_id, member_id)


def join_key(group_id: str) -> TimerKey:
    return (JOIN, group_id, "")


def sync_key(group_id: str) -> TimerKey:
    return (SYNC, group_id, "")


def retention_key(partition: int) -> TimerKey:
    return (RETENTION, "", str(partition))


CONSUMER_SESSION = "consumer_session"  # a consumer-group member's session (KIP-848)
CONSUMER_REVOCATION = "consumer_revocation"  # a member's rebalance timeout while it revokes


#: A classic-protocol member of a consumer group (online migration) asked to rejoin: fenced if
#: its JoinGroup does not come within its rebalance timeout (Kafka's consumer group join key).
CONSUMER_CLASSIC_JOIN = "consumer_classic_join"
#: ... and after its JoinGroup, fenced if its SyncGroup does not come within it (sync key).
CONSUMER_CLASSIC_SYNC = "consumer_classic_sync"


def consumer_session_key(group_id: str, member_id: str) -> TimerKey:
    return (CONSUMER_SESSION, group_id, member_id)


def consumer_revocation_key(group_id: str, member_id: str) -> TimerKey:
    return (CONSUMER_REVOCATION, group_id, member_id)


CLIENT_BALANCE_SESSION = "client_balance_session"  # a client-balance node's session (TubeMQ)


def client_balance_session_key(group_id: str, member_id: str) -> TimerKey:
    return (CLIENT_BALANCE_SESSION, group_id, member_id)
