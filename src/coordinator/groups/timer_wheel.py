"""The group runtime's timers: one loop timer for all of them.

The core asks for a timer per member and key (a session timeout, a join or sync deadline), and a
thousand-member group has thousands armed at once, most of them pushed later by every heartbeat.
An `asyncio.TimerHandle` per key costs a handle, a copy of the context and an entry in the loop's
heap (RESULTS.md: figures behind the code); here a key costs an entry in two dicts
and in one list. Deadlines are filed by the millisecond they fall in (a slot: the keys due in
that millisecond, in the order filed), the filled milliseconds sit in a heap, and a single loop
timer is armed for the earliest one.

Moving a deadline later, what heartbeats do thousands of times a second, only updates the
deadline: the key stays filed where it was and, when that millisecond comes, is filed again at
its deadline (a key is never fired before its deadline). Moving it earlier files it again at
once; its older filing is then stale and skipped, as is a cancelled key's. Keys due in one wake-up
fire one after another in the order of their milliseconds, each through `fire(key, now_ms)`,
which may schedule and cancel timers itself (a timer scheduled for a millisecond already past
fires in the same pass).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Callable, Hashable

log = logging.getLogger("coordinator.runtime")


class TimerWheel:
    """Timers by key on one event loop timer (see the module docstring).

    `now_ms()` is the clock deadlines are in; `loop_time(ms)` turns such a deadline into the
    loop's time (`loop.call_at`'s). Call `close` to drop every timer."""

    __slots__ = (
        "_deadlines",
        "_filed",
        "_fire",
        "_loop",
        "_loop_time",
        "_now_ms",
        "_slots",
        "_ticks",
        "_wake",
        "_wake_at",
        "_waking",
    )

    def __init__(
        self,
        now_ms: Callable[[], int],
        loop_time: Callable[[int], float],
        fire: Callable[[Hashable, int], None],
    ) -> None:
        self._now_ms = now_ms
        self._loop_time = loop_time
        self._fire = fire
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Each armed key's deadline (ms)...
        self._deadlines: dict[Hashable, int] = {}
        #: ...and the millisecond it is filed under (never later than its deadline).
        self._filed: dict[Hashable, int] = {}
        #: The keys filed under each millisecond (stale entries included), and a heap of those
        #: milliseconds.
        self._slots: dict[int, list[Hashable]] = {}
        self._ticks: list[int] = []
        self._wake: asyncio.TimerHandle | None = None
        self._wake_at: int | None = None
        self._waking = False

    def __len__(self) -> int:
        return len(self._deadlines)

    def deadline(self, key: Hashable) -> int | None:
        return self._deadlines.get(key)

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        """Fire `key` at `deadline_ms` (replacing its earlier deadline, if armed)."""
        self._deadlines[key] = deadline_ms
        filed = self._filed.get(key)
        if filed is not None and filed <= deadline_ms:
            return  # it comes up no later than needed and is filed again then
        self._file(key, deadline_ms)

    def cancel(self, key: Hashable) -> None:
        self._deadlines.pop(key, None)
        self._filed.pop(key, None)  # its slot entry is stale now

    def close(self) -> None:
        if self._wake is not None:
            self._wake.cancel()
        self._wake = self._wake_at = None
        self._deadlines.clear()
        self._filed.clear()
        self._slots.clear()
        self._ticks.clear()

    def _file(self, key: Hashable, tick: int) -> None:
        self._filed[key] = tick
        slot = self._slots.get(tick)
        if slot is not None:
            slot.append(key)
            return
        self._slots[tick] = [key]
        heapq.heappush(self._ticks, tick)
        if not self._waking and (self._wake_at is None or tick < self._wake_at):
            self._arm(tick)

    def _arm(self, tick: int) -> None:
        if self._wake is not None:
            self._wake.cancel()
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        self._wake_at = tick
        self._wake = self._loop.call_at(self._loop_time(tick), self._on_wake)

    def _on_wake(self) -> None:
        self._wake = self._wake_at = None
        self._waking = True
        try:
            now = self._now_ms()
            ticks, slots, filed, deadlines = self._ticks, self._slots, self._filed, self._deadlines
            while ticks and ticks[0] <= now:
                tick = heapq.heappop(ticks)
                for key in slots.pop(tick):
                    if filed.get(key) != tick:
                        continue  # cancelled, or filed again earlier
                    deadline = deadlines[key]
                    if deadline > now:
                        self._file(key, deadline)
                        continue
                    del filed[key], deadlines[key]
                    try:
                        self._fire(key, now)
                    except Exception:  # the keys after it still fire
                        log.exception("timer %r failed", key)
        finally:
            self._waking = False
            if self._ticks:
                self._arm(self._ticks[0])


__all__ = ["TimerWheel"]
