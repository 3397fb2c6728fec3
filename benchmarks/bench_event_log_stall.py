"""How long the event log holds the event loop for one huge event: a KIP-848 `target_assignment`
of 10,000 members x 100 topics (1M partitions).

A ticker on the loop asks to wake every millisecond; the figure is its largest lateness while the
event is handed to the event log and marshalled. Ours: `EventLog.emit` (the loop only queues; the
sender thread marshals in slices, `coordinator.groups.event_log.frames`). Peer, same run: the frame
marshalled on the loop in one `marshal.dumps` call, as the event log did before. Medians of
`--runs`.

    .venv/bin/python benchmarks/bench_event_log_stall.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import marshal
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from coordinator.groups.event_log.log import EventLog
from rebalance.event_schema import EventType
from rebalance.events import Event


def target_event(members: int, topics: int) -> Event:
    assignments = {
        f"member-{m:05d}": tuple((f"topic-{t}", (m,)) for t in range(topics))
        for m in range(members)
    }
    fields = {"group_type": "consumer", "assignor": "uniform", "assignments": assignments}
    return Event(EventType.TARGET_ASSIGNMENT, 1, "big", 7, None, fields)


async def largest_lateness_ms(hand_over: Callable[[], object], settle_s: float) -> float:
    """The ticker's largest lateness (ms) from the hand-over until `settle_s` later."""
    lateness: list[float] = []
    running = True

    async def ticker() -> None:
        while running:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            lateness.append((time.perf_counter() - started - 0.001) * 1000)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    lateness.clear()
    hand_over()
    await asyncio.sleep(settle_s)
    running = False
    await task
    return max(lateness)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=100)
    args = parser.parse_args()
    event = target_event(args.members, args.topics)
    frame = [(0, [(str(event.type), event.ts, event.group, event.generation, None, event.fields)])]
    ours: list[float] = []
    peer: list[float] = []
    with tempfile.TemporaryDirectory() as directory:
        log = EventLog(Path(directory), 1)
        for _ in range(args.runs):
            ours.append(await largest_lateness_ms(lambda: log.emit([event], 0), 1.5))
            peer.append(await largest_lateness_ms(lambda: marshal.dumps(frame) and None, 0.3))
        log.close()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.members} members x {args.topics} topics")
    print(f"event log (sender thread, slices): {statistics.median(ours):7.1f} ms  {ours}")
    print(f"peer: marshal on the loop          : {statistics.median(peer):7.1f} ms  {peer}")
    print(f"ratio peer / ours: {statistics.median(peer) / statistics.median(ours):.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
