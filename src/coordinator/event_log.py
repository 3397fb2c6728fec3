"""The coordinator's event log: JSON Lines files, rotated by size, written by a process of its own.

Events come from the core's `Result.events` (schema in `rebalance.events`). The request path
only hands a batch of events to a queue; a writer process decodes them (`sync_completed` carries
every member's raw assignment), serialises them and appends them to
`events-<sequence>.jsonl` in the log directory, starting a new file when the current one would
exceed `max_bytes`. On close the queue is drained, so every event accepted is written.

Why a process and not a thread: a thread doing that work holds the GIL in slices of up to 5 ms
while the event loop waits to send replies, and a 1000-member rebalance took 1.2-1.7 times as
long with the log on as off (`benchmarks/bench_event_log.py`). The writer also watches its parent:
if the server dies without closing it (SIGKILL), the writer writes what it has and exits.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import queue
import threading
import time
from collections.abc import Callable, Iterable
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from pathlib import Path
from typing import IO

from rebalance.events import Event

log = logging.getLogger("coordinator.event_log")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
PARENT_CHECK_SECONDS = 1.0
"""How often an idle writer checks that the server that started it is still alive."""
CLOSE_TIMEOUT_SECONDS = 60.0

Batch = tuple[list[Event], int]
"""Events of one `emit` call and the offset that turns their `ts` into epoch ms."""


class EventLog:
    def __init__(self, directory: Path, node_id: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1024:
            raise ValueError(f"event log max_bytes must be at least 1024, got {max_bytes}")
        if multiprocessing.current_process().daemon:
            raise RuntimeError(
                "the event log writes from a process of its own, which a daemonic process may "
                "not start: run the server in a non-daemonic process, or without its event log "
                "(GroupCoordinatorExtension(event_log=False))"
            )
        self.directory = directory
        self.node_id = node_id
        self.max_bytes = max_bytes
        directory.mkdir(parents=True, exist_ok=True)  # a bad directory fails here, not later
        context = _writer_context()
        self._queue: Queue[list[Batch] | None] = context.Queue()
        self._problems: Queue[str | None] = context.Queue()
        self._process: BaseProcess = context.Process(
            target=write_events,
            args=(self._queue, self._problems, directory, node_id, max_bytes),
            name="event-log",
            daemon=True,
        )
        self._process.start()
        # The writer's own stderr is wherever its fork server started; its failures are logged
        # here instead, through the server's logging, as they happen (the thread only waits).
        self._reporter = threading.Thread(
            target=self._report, name="event-log-problems", daemon=True
        )
        self._reporter.start()
        self._pending: list[Batch] = []
        self._flush_scheduled = False
        self._closed = False

    @property
    def writer_pid(self) -> int | None:
        """The writer process's id, for watching what it costs (None once it has exited)."""
        return self._process.pid if self._process.is_alive() else None

    def _report(self) -> None:
        while (problem := self._problems.get()) is not None:
            log.error("%s", problem)

    def emit(self, events: Iterable[Event], monotonic_offset_ms: int) -> None:
        """Queue events whose `ts` is on the core's clock; `offset` converts to epoch ms.

        Never blocks. On an event loop, the events of one loop iteration go to the writer
        together: each hand-over wakes the queue's feeder thread, and one a request cost
        durable commits a fifth of their rate.
        """
        if self._closed:
            return
        batch = list(events)
        if not batch:
            return
        self._pending.append((batch, monotonic_offset_ms))
        if self._flush_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on a loop: hand over at once
            self._flush()
            return
        loop.call_soon(self._flush)
        self._flush_scheduled = True

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._pending:
            self._queue.put(self._pending)
            self._pending = []

    def close(self) -> None:
        """Write everything queued so far, then stop the writer."""
        if self._closed:
            return
        self._flush()
        self._closed = True
        self._queue.put(None)
        self._queue.close()
        if self._process.is_alive():
            self._queue.join_thread()  # everything is in the pipe
        else:  # nobody reads the pipe: waiting for it to drain would never end
            self._queue.cancel_join_thread()
        self._process.join(CLOSE_TIMEOUT_SECONDS)
        if self._process.is_alive():
            log.error("event log writer did not finish in %.0f s; stopped", CLOSE_TIMEOUT_SECONDS)
            self._process.terminate()
            self._process.join()
        elif self._process.exitcode:
            log.error("event log writer exited with status %s", self._process.exitcode)
        self._problems.put(None)
        self._reporter.join()


def _writer_context() -> ForkServerContext | SpawnContext:
    """Where writers are started from: a fork server that has imported this module once (a new
    interpreter importing it takes about 0.7 s; a fork of the server, milliseconds), never a fork
    of the server process itself, which runs threads. Spawn where there is no fork server."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # no effect once the fork server runs
    return context


def stop_helper_processes() -> None:
    """Stop the helpers multiprocessing started for writers in this process: the fork server
    they start from and the resource tracker that cleans up their queues' semaphores. Both would
    otherwise outlive this process by a moment (each exits when it sees its parent gone), which a
    caller that says nothing is left running (the demo) cannot allow. Later writers start new
    ones. Call it only when no writer is running.

    Unreferenced queues are collected first, so the tracker has nothing left to clean up (it
    would warn of leaked semaphores). `_stop` is CPython's own way to end either helper (private,
    kept for its tests since 3.8); without it a helper is left to exit with this process.
    """
    gc.collect()
    for module, attribute in (
        (multiprocessing.forkserver, "_forkserver"),
        (multiprocessing.resource_tracker, "_resource_tracker"),
    ):
        stop: Callable[[], None] | None = getattr(getattr(module, attribute, None), "_stop", None)
        if stop is not None:
            stop()


class _Files:
    """The log directory's files: appends lines, starting a new file when one would be too big."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        existing = directory.glob("events-*.jsonl")
        self.sequence = max((self._sequence_of(p) for p in existing), default=0)
        self.handle: IO[bytes] | None = None
        self.size = 0

    @staticmethod
    def _sequence_of(path: Path) -> int:
        try:
            return int(path.stem.split("-", 1)[1])
        except (IndexError, ValueError):
            return 0

    def append(self, data: bytes) -> None:
        if self.handle is None or (self.size + len(data) > self.max_bytes and self.size > 0):
            self.close()
            self.sequence += 1
            path = self.directory / f"events-{self.sequence:06d}.jsonl"
            self.handle = path.open("ab")
            self.size = path.stat().st_size
        self.handle.write(data)
        self.size += len(data)

    def flush(self) -> None:
        if self.handle is not None:
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def _line(event: Event, offset: int, node_id: int) -> bytes:
    record = event.to_json_dict(node_id)
    record["ts"] = event.ts + offset
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
    return text.encode("utf-8")


def _next_batches(
    source: Queue[list[Batch] | None], server_alive: Callable[[], bool]
) -> tuple[list[Batch], bool]:
    """Wait for work, then take all that is queued; (batches, whether to stop after them)."""
    while True:
        try:
            first = source.get(timeout=PARENT_CHECK_SECONDS)
            break
        except queue.Empty:
            if not server_alive():  # the server died without closing the log
                return [], True
    items = [first]
    while True:  # one write call per burst
        try:
            items.append(source.get_nowait())
        except queue.Empty:
            break
    return [batch for item in items if item is not None for batch in item], None in items


def write_events(
    source: Queue[list[Batch] | None],
    problems: Queue[str | None],
    directory: Path,
    node_id: int,
    max_bytes: int,
) -> None:
    """The writer process: append every batch until told to stop (or orphaned).

    After a write error it reports it once to `problems` and keeps draining the queue without
    writing, so the server never accumulates what cannot be written.
    """
    # The process that asked for this writer (a fork server is only its parent in name):
    # its sentinel tells when it is gone, however it ended.
    server = multiprocessing.parent_process()
    server_alive = server.is_alive if server is not None else (lambda: True)
    files = _Files(directory, max_bytes)
    failed = False
    try:
        while True:
            batches, stop = _next_batches(source, server_alive)
            if not failed:
                try:
                    for events, offset in batches:
                        for event in events:
                            files.append(_line(event, offset, node_id))
                    files.flush()
                except OSError as error:
                    problems.put(
                        f"event log writer failed; events from now on are not written: {error!r}"
                    )
                    failed = True
            if stop:
                return
    finally:
        files.close()


def epoch_offset_ms(monotonic_now_ms: int) -> int:
    """What to add to a monotonic reading (ms) to get milliseconds since the epoch."""
    return int(time.time() * 1000) - monotonic_now_ms
