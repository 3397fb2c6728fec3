"""How a serving process sets up CPython's garbage collector (and gives memory back).

A coordinator holds many long-lived objects (groups, members, offsets, connections) and creates
many short-lived ones per request (commands, replies, results, futures), none of which form
reference cycles in the common case. With CPython's default thresholds (a young-generation
collection every 700 net allocations) the collector ran a hundred times during one
1000-member rebalance, and a third of the server's CPU for that round was collection
(`benchmarks/bench_groups.py`, RESULTS.md). So a serving process, once it has loaded its state:

- freezes what is alive (`gc.freeze`): the loaded groups and offsets are never scanned again;
- collects the young generation every 50,000 net allocations instead of 700: cycles are still
  collected, just in fewer, larger passes. A 1000-member round's 999 parked JoinGroups alone
  count 10,000 net allocations of container objects (`gc.get_count()`), nearly all freed by
  reference counting when the round ends; at 10,000 the collector ran in every round and
  scanned them to no avail, at 50,000 it runs in none (RESULTS.md: figures behind the code).

Called on a running loop, it also starts `coordinator.node.heap_trim`: glibc's heaps trimmed once a
second when the resident memory grew by a MiB since the last trim (what a burst of joins left
freed but resident).

Library use (`coordinator.testing.server.running_server`, tests, embedding) leaves the collector as
the host process set it: this is for processes that serve, `rebalance serve` and the
benchmarks' server processes.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Final

from coordinator.node.heap_trim import HeapTrimmer, start_heap_trimming

YOUNG_THRESHOLD: Final = 50_000
"""Net allocations between young-generation collections (CPython's default: 700)."""


def tune_for_serving() -> HeapTrimmer | None:
    """Call once the node has loaded its state and is about to serve; on a running loop,
    returns the heap trimmer it started (None: not on glibc, or no loop)."""
    gc.collect()
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return start_heap_trimming()


__all__ = ["YOUNG_THRESHOLD", "tune_for_serving"]
