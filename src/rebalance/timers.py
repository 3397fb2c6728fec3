"""Timer keys: what the core asks the shell to wake it for.

A key is a `(kind, group id, member id or "")` tuple: hashable, nothing to parse back. The shell
arms one timer per key (a new deadline replaces the old one) and calls `on_timer(key, now_ms)`
when it fires; the core drops firings whose deadline it no longer holds. Each group type
declares its own kinds and keys in its package (`GroupType.timer_kinds`,
`rebalance.classic.timers`, ...); the core's own is the periodic offset expiry.
"""

from __future__ import annotations

TimerKey = tuple[str, str, str]

RETENTION = "retention"  # periodic offset expiry of one partition (member field: partition)


def retention_key(partition: int) -> TimerKey:
    return (RETENTION, "", str(partition))
