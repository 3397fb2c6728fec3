"""Time as a parameter: the core never reads a clock; the shell passes `now_ms` to every call.

`Clock` is what runtimes and test harnesses provide. `ManualClock` (in `rebalance.testing`)
advances only when told to, which makes every timer rule testable without sleeping.
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    """A millisecond clock. Only differences between readings are meaningful."""

    def now_ms(self) -> int: ...
