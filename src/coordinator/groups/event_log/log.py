"""The coordinator's event log: JSON Lines files, rotated by size, written by a process of its own.

Events come from the core's `Result.events` (schema in `rebalance.events`). The request path
only queues them: the events of one loop iteration make one frame, put on a queue; a sender
thread marshals each frame (in slices: `coordinator.groups.event_log.frames`) and writes it into
the pipe of the writer process (`coordinator.groups.event_log.writer`), which decodes assignments
(`sync_completed` carries every member's raw assignment), serialises the lines and appends them
to `events-<sequence>.jsonl` in the log directory, starting a new file when the current one would
exceed `max_bytes`. On close the queue is drained and the writer finishes, so every event
accepted is written.

Why a process and not a thread: a thread doing that work holds the GIL in slices while the event
loop waits to send replies, which made a large rebalance markedly slower with the log on than off
(`benchmarks/bench_event_log.py`, RESULTS.md). The sender thread only waits on
the pipe, which releases the GIL.

The writer is one child process started by its file's path (`python -I`), never a fork server
or a re-import of the server's `__main__`: the server can be embedded in any script, one without
a main guard or one read from stdin included, and in a daemonic process. The writer reports how
many events it has written; if it dies, the server logs one error with the count of events not
written and keeps serving without its log (events after that are counted, and the count is
logged at close). A SIGTERM to the whole process group stops both cleanly: the writer runs in a
session of its own, which signals to the server's process group do not reach, ignores SIGTERM,
SIGINT and SIGHUP anyway (systemd signals every process of a service), and finishes when the
server, stopping, closes its input.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from coordinator.errors import OperationalError
from coordinator.groups.event_log import frames as event_frames
from coordinator.groups.event_log import writer as event_log_writer
from rebalance.events import Event

log = logging.getLogger("coordinator.event_log")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
PARENT_CHECK_SECONDS = event_log_writer.PARENT_CHECK_SECONDS
"""How often an idle writer checks that the server that started it is still its parent."""
CLOSE_TIMEOUT_SECONDS = 60.0

Batch = tuple[int, list[event_log_writer.EventTuple]]
"""Events of one `emit` call, with the offset that turns their `ts` into epoch ms."""


def writer_command(directory: Path, node_id: int, max_bytes: int) -> list[str]:
    """The writer's command line: this interpreter, isolated, running the writer's own file."""
    if not sys.executable:
        raise OperationalError(
            "cannot start the event log writer: this Python does not know its own executable "
            "(sys.executable is empty); run without the event log (event_log=False)"
        )
    program = Path(event_log_writer.__file__)
    return [sys.executable, "-I", str(program), str(directory), str(node_id), str(max_bytes)]


class EventLog:
    def __init__(self, directory: Path, node_id: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1024:
            raise ValueError(f"event log max_bytes must be at least 1024, got {max_bytes}")
        self.directory = directory
        self.node_id = node_id
        self.max_bytes = max_bytes
        directory.mkdir(parents=True, exist_ok=True)  # a bad directory fails here, not later
        try:
            self._process = subprocess.Popen(
                writer_command(directory, node_id, max_bytes),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
                # Signals meant for the server's process group (Ctrl-C, a killpg) never reach
                # it, not even in the moment before it has set itself to ignore them.
                start_new_session=True,
            )
        except OSError as exc:
            raise OperationalError(
                f"cannot start the event log writer ({sys.executable}): {exc.strerror}"
            ) from exc
        self._frames: queue.SimpleQueue[tuple[list[Batch], int] | None] = queue.SimpleQueue()
        self._pending: list[Batch] = []
        self._pending_events = 0
        self._flush_scheduled = False
        self._closed = False
        self._closing = False
        self.accepted = 0
        """Events sent towards the writer (all of them, unless it died)."""
        self.written = 0
        """Events the writer has reported written."""
        self.lost = 0
        """Events sent that the writer did not write because it died (in the error it logs)."""
        self.dropped = 0
        """Events emitted after the writer died, never sent (logged at close)."""
        self._dead = False
        self._counting = threading.Lock()  # `accepted` against the moment of death
        self._sender = threading.Thread(target=self._send, name="event-log-sender", daemon=True)
        self._reporter = threading.Thread(
            target=self._report, name="event-log-reports", daemon=True
        )
        self._sender.start()
        self._reporter.start()

    @property
    def writer_pid(self) -> int | None:
        """The writer process's id, for watching what it costs (None once it has exited)."""
        return self._process.pid if self._process.poll() is None else None

    def emit(self, events: Iterable[Event], monotonic_offset_ms: int) -> None:
        """Queue events whose `ts` is on the core's clock; `offset` converts to epoch ms.

        Never blocks. On an event loop, the events of one loop iteration go to the writer
        together, in one frame: one hand-over a request would cost durable commits a fifth of
        their rate.
        """
        if self._closed:
            return
        batch = [(str(e.type), e.ts, e.group, e.generation, e.member, e.fields) for e in events]
        if not batch:
            return
        self._pending.append((monotonic_offset_ms, batch))
        self._pending_events += len(batch)
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
        if not self._pending:
            return
        batches, count = self._pending, self._pending_events
        self._pending, self._pending_events = [], 0
        with self._counting:
            if self._dead:
                self.dropped += count
                return
            self.accepted += count
        # Marshalled by the sender thread, in slices (`event_frames`): a 10,000-member target
        # marshalled here in one call would hold the loop (bench_event_log_stall.py). The core
        # never changes an
        # event's fields once emitted, so reading them from that thread is safe.
        self._frames.put((batches, count))

    def _send(self) -> None:
        """The sender thread: frames marshalled and written into the writer's pipe, in order;
        waiting releases the GIL, and so does marshalling, between its slices."""
        pipe = self._process.stdin
        assert pipe is not None
        fd = pipe.fileno()
        broken = False
        while (item := self._frames.get()) is not None:
            if not broken:
                broken = self._send_frame(fd, *item)
            # Nothing of this frame is kept while waiting for the next (a large group's
            # assignments, and their marshalled bytes in `_send_frame`'s locals, are freed).
            item = None
        with contextlib.suppress(OSError):
            pipe.close()

    def _send_frame(self, fd: int, batches: list[Batch], count: int) -> bool:
        """Marshal one frame and write it into the pipe; True if the writer is gone (the
        reporter counts what it never got)."""
        try:
            payload = event_frames.dumps(batches)
        except ValueError as exc:  # a field that is not a plain value: a bug in the core
            log.error("event log: %d events not written: %s", count, exc)
            with self._counting:
                self.accepted -= count
            return False
        try:
            for part in (event_log_writer.FRAME_HEADER.pack(len(payload)), payload):
                view = memoryview(part)
                while view:
                    view = view[os.write(fd, view) :]
        except OSError:  # the writer is gone; the reporter says so
            return True
        return False

    def _report(self) -> None:
        """The reporter thread: the writer's progress and failures, and its end."""
        out = self._process.stdout
        assert out is not None
        for raw in out:
            kind, _, rest = raw.decode(errors="replace").rstrip("\n").partition(" ")
            if kind == "written":
                self.written = int(rest)
            elif kind == "error":
                log.error("%s", rest)
            elif kind == "resumed":
                log.warning(
                    "event log writer writes again; up to %s events were lost meanwhile", rest
                )
        out.close()
        status = self._process.wait()
        if self._closing and status == 0:
            return
        with self._counting:
            self._dead = True
            self.lost = self.accepted - self.written
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        log.error(
            "event log writer (pid %d) %s: %d events not written; the server keeps serving "
            "without its event log",
            self._process.pid,
            how,
            self.lost,
        )

    def close(self) -> None:
        """Write everything queued so far, then stop the writer."""
        if self._closed:
            return
        self._flush()
        self._closed = True
        self._closing = True
        self._frames.put(None)
        self._sender.join()
        try:
            self._process.wait(CLOSE_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            log.error("event log writer did not finish in %.0f s; stopped", CLOSE_TIMEOUT_SECONDS)
            self._process.kill()
        self._reporter.join()
        if self.dropped:
            log.warning(
                "event log: %d more events were not written after the writer died", self.dropped
            )
        elif not self._dead and self.written < self.accepted:  # it reported a write failure
            log.warning("event log: %d events were not written", self.accepted - self.written)


def epoch_offset_ms(monotonic_now_ms: int) -> int:
    """What to add to a monotonic reading (ms) to get milliseconds since the epoch."""
    return int(time.time() * 1000) - monotonic_now_ms
