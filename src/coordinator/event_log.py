"""The coordinator's event log: JSON Lines files, rotated by size, written off the event loop.

Events come from the core's `Result.events` (schema in `rebalance.events`). The request path
only stamps an event with wall-clock time and the node id and puts it on a queue; a writer
thread serialises and appends it, so a slow disk never delays a reply. Files are named
`events-<sequence>.jsonl` in the log directory; a new one starts when the current one would
exceed `max_bytes`. On close the queue is drained, so every event accepted is written.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from rebalance.events import Event

log = logging.getLogger("coordinator.event_log")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_STOP = object()


class EventLog:
    def __init__(self, directory: Path, node_id: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1024:
            raise ValueError(f"event log max_bytes must be at least 1024, got {max_bytes}")
        self.directory = directory
        self.node_id = node_id
        self.max_bytes = max_bytes
        directory.mkdir(parents=True, exist_ok=True)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._sequence = max((self._sequence_of(p) for p in self._files()), default=0)
        self._thread = threading.Thread(target=self._write_loop, name="event-log", daemon=True)
        self._thread.start()
        self._closed = False
        self.written = 0

    def _files(self) -> list[Path]:
        return sorted(self.directory.glob("events-*.jsonl"))

    @staticmethod
    def _sequence_of(path: Path) -> int:
        try:
            return int(path.stem.split("-", 1)[1])
        except (IndexError, ValueError):
            return 0

    def emit(self, events: Iterable[Event], monotonic_offset_ms: int) -> None:
        """Queue events whose `ts` is on the core's clock; `offset` converts to epoch ms."""
        if self._closed:
            return
        for event in events:
            self._queue.put((event, monotonic_offset_ms))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()

    def _write_loop(self) -> None:
        handle = None
        size = 0
        try:
            while True:
                item = self._queue.get()
                batch: list[Any] = [item]
                while True:  # drain what is queued: one write call per burst
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = any(entry is _STOP for entry in batch)
                lines = [self._line(entry) for entry in batch if entry is not _STOP]
                for line in lines:
                    data = line.encode("utf-8")
                    if handle is None or (size + len(data) > self.max_bytes and size > 0):
                        if handle is not None:
                            handle.close()
                        self._sequence += 1
                        path = self.directory / f"events-{self._sequence:06d}.jsonl"
                        handle = path.open("ab")
                        size = path.stat().st_size
                    handle.write(data)
                    size += len(data)
                    self.written += 1
                if handle is not None:
                    handle.flush()
                if stop:
                    return
        except OSError:
            log.exception("event log writer failed; events from now on are not written")
        finally:
            if handle is not None:
                handle.close()

    def _line(self, entry: object) -> str:
        event, offset = cast(tuple[Event, int], entry)
        record = event.to_json_dict(self.node_id)
        record["ts"] = event.ts + offset
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"


def epoch_offset_ms(monotonic_now_ms: int) -> int:
    """What to add to a monotonic reading (ms) to get milliseconds since the epoch."""
    return int(time.time() * 1000) - monotonic_now_ms
