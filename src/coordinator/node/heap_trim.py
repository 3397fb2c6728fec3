"""Giving memory back to the operating system after a burst (glibc's `malloc_trim`).

A burst of work (a thousand members joining, a round's fan-out, a flood of connections) makes
many short-lived objects at once. Once they are freed, glibc's allocator keeps their memory:
it returns only the top of its heap to the system, and a heap whose top is still in use (a
long-lived object allocated during the burst) keeps every page it touched resident. A serving
process thus stays as large as its busiest moment. `malloc_trim(0)` hands the wholly free pages
anywhere in glibc's heaps back (madvise). It walks the heap's free chunks, so a call costs
little when there is nothing to give back and grows with what it gives back (RESULTS.md: figures
behind the code).

`HeapTrimmer` checks the process's resident memory once a second (one read of
`/proc/self/statm`) and trims when it has grown by `threshold` since the last trim: after a
burst, not on every allocation, and never again while memory stays level. Growth that is live
data (new groups, new connections) is not given back; the trim then found nothing, and the next
one comes only after as much growth again. Python's own small-object allocator (pymalloc) frees
an arena only when it is wholly empty and is not helped by this.

Only where it applies: Linux with glibc (`malloc_trim` found through `ctypes`, imported at the
first trim, not at start). Elsewhere `start_heap_trimming` does nothing.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Final

INTERVAL: Final = 1.0
"""Seconds between two checks of the resident memory."""

THRESHOLD: Final = 1 << 20
"""Bytes the resident memory must have grown by since the last trim for a trim to be tried."""

_STATM: Final = "/proc/self/statm"


def resident_bytes() -> int:
    """This process's resident memory (Linux: `/proc/self/statm`)."""
    with open(_STATM, "rb") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _glibc_malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


class HeapTrimmer:
    """Trims glibc's heaps once the resident memory has grown by `threshold` bytes since the
    last trim (see the module docstring). `trims` and `released` say what it did."""

    def __init__(
        self,
        *,
        interval: float = INTERVAL,
        threshold: int = THRESHOLD,
        resident: Callable[[], int] = resident_bytes,
        trim: Callable[[int], int] | None = None,
    ) -> None:
        self.interval = interval
        self.threshold = threshold
        self._resident = resident
        self._trim = trim
        self._baseline = resident()
        self._timer: asyncio.TimerHandle | None = None
        #: Trims made, and the bytes of resident memory they gave back in all.
        self.trims = 0
        self.released = 0

    def start(self) -> None:
        """Check every `interval` seconds on the running loop until `stop`."""
        self._timer = asyncio.get_running_loop().call_later(self.interval, self._tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        self.check()
        self.start()

    def check(self) -> bool:
        """Trim if the resident memory grew by `threshold` since the last trim; True if it
        tried."""
        now = self._resident()
        if now - self._baseline < self.threshold:
            self._baseline = min(self._baseline, now)  # freed meanwhile: measure from here
            return False
        if self._trim is None:
            self._trim = _glibc_malloc_trim()
            if self._trim is None:  # (not glibc: `start_heap_trimming` stops before this)
                self._baseline = now
                return False
        self._trim(0)
        after = self._resident()
        self.trims += 1
        self.released += max(now - after, 0)
        self._baseline = after
        return True


def start_heap_trimming() -> HeapTrimmer | None:
    """Start trimming on the running loop where it applies (Linux with glibc), else None."""
    if not sys.platform.startswith("linux") or not os.path.exists(_STATM) or not _glibc():
        return None
    trimmer = HeapTrimmer()
    trimmer.start()
    return trimmer


def _glibc() -> bool:
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):  # not a glibc system
        return False
    return version is not None and version.startswith("glibc")


__all__ = ["INTERVAL", "THRESHOLD", "HeapTrimmer", "resident_bytes", "start_heap_trimming"]
