"""The client-balance group's timer kind and key: a node's session (TubeMQ's heartbeat
timeout)."""

from __future__ import annotations

from rebalance.timers import TimerKey

CLIENT_BALANCE_SESSION = "client_balance_session"  # a client-balance node's session (TubeMQ)


def client_balance_session_key(group_id: str, member_id: str) -> TimerKey:
    return (CLIENT_BALANCE_SESSION, group_id, member_id)
