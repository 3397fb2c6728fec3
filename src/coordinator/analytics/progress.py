"""Progress of long Spark runs on stderr: the pipeline step, and task counts of active stages."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from pyspark import SparkContext

POLL_SECONDS = 2.0


@contextmanager
def spark_progress(
    context: SparkContext, step: str, *, enabled: bool = True, stream: TextIO = sys.stderr
) -> Iterator[None]:
    """Print `step`, then every few seconds the tasks done per running stage, until it ends."""
    if not enabled:
        yield
        return
    print(f"[analytics] {step}", file=stream, flush=True)
    stop = threading.Event()

    def poll() -> None:
        tracker = context.statusTracker()
        last = ""
        while not stop.wait(POLL_SECONDS):
            parts = []
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks}")
            line = ", ".join(parts)
            if line and line != last:
                print(f"[analytics]   {step}: {line} tasks", file=stream, flush=True)
                last = line

    watcher = threading.Thread(target=poll, name="analytics-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
