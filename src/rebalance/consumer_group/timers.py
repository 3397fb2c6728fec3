"""The consumer group's timer kinds and keys (KIP-848)."""

from __future__ import annotations

from rebalance.timers import TimerKey

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
