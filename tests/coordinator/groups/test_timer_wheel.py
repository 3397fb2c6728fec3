"""The runtime's timers on one loop timer: never early, moved later lazily, moved earlier at
once, cancelled, and one failing timer does not stop the others."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Hashable

import pytest

from coordinator.groups.timer_wheel import TimerWheel


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def wheel(fired: list[tuple[Hashable, int]]) -> TimerWheel:
    offset = asyncio.get_running_loop().time() * 1000 - now_ms()
    return TimerWheel(
        now_ms, lambda ms: (ms + offset) / 1000, lambda key, now: fired.append((key, now))
    )


async def test_timers_fire_in_deadline_order_never_early_on_one_loop_timer() -> None:
    fired: list[tuple[Hashable, int]] = []
    timers = wheel(fired)
    start = now_ms()
    deadlines = {"c": start + 60, "a": start + 20, "b": start + 40, "a2": start + 20}
    for key, deadline in deadlines.items():
        timers.schedule(key, deadline)
    scheduled = asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
    assert sum(not handle.cancelled() for handle in scheduled) == 1  # not one per key
    await asyncio.sleep(0.12)
    assert [key for key, _ in fired] == ["a", "a2", "b", "c"]
    assert all(at >= deadlines[str(key)] for key, at in fired)
    assert len(timers) == 0


async def test_a_deadline_moved_later_fires_at_the_new_one_and_earlier_at_once() -> None:
    fired: list[tuple[Hashable, int]] = []
    timers = wheel(fired)
    start = now_ms()
    timers.schedule("later", start + 20)
    timers.schedule("later", start + 80)  # a heartbeat pushing a session timer
    timers.schedule("earlier", start + 200)
    timers.schedule("earlier", start + 30)
    await asyncio.sleep(0.06)
    assert [key for key, _ in fired] == ["earlier"]
    assert timers.deadline("later") == start + 80
    await asyncio.sleep(0.08)
    assert [key for key, _ in fired] == ["earlier", "later"]
    assert fired[1][1] >= start + 80
    assert len(timers) == 0


async def test_cancelled_timers_do_not_fire_and_a_failing_one_spares_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fired: list[Hashable] = []

    def fire(key: Hashable, now: int) -> None:
        if key == "broken":
            raise RuntimeError("boom")
        fired.append(key)
        if key == "chain":  # a timer that schedules another, already due
            timers.schedule("chained", now)

    offset = asyncio.get_running_loop().time() * 1000 - now_ms()
    timers = TimerWheel(now_ms, lambda ms: (ms + offset) / 1000, fire)
    start = now_ms()
    for key in ("gone", "broken", "chain", "after"):
        timers.schedule(key, start + 20)
    timers.cancel("gone")
    with caplog.at_level(logging.ERROR, logger="coordinator.runtime"):
        await asyncio.sleep(0.06)
    assert fired == ["chain", "after", "chained"]
    assert "timer 'broken' failed" in caplog.text
    timers.schedule("closed", now_ms() + 10)
    timers.close()
    await asyncio.sleep(0.03)
    assert "closed" not in fired
