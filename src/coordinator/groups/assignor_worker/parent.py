"""The assignor worker's parent side: `AssignorWorker`, the handle the runtime holds on the loop.

It starts the child process (`child`), keeps a `mirror.Mirror` of what the child holds per group
and runs two threads, each in steps of a few milliseconds (the loop waits for the interpreter
lock at most that long):

* the sending thread compares a new `TargetInputs` with the mirror and pickles the differences
  as `messages.Delta`s, written to the pipe (a full pipe blocks it, not the loop), so even the
  first computation after a load, which sends the whole group, is cut small;
* the receiving thread unpickles the result's chunks and rebuilds the event's whole target by
  name (`named_forms.NamedForms`), so only changed members cost Python work.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.groups import record_codec
from coordinator.groups.assignor_worker import messages
from coordinator.groups.assignor_worker.messages import (
    Compute,
    Failed,
    Forget,
    Order,
    Prime,
    Primed,
    Request,
    Stats,
    StatsRequest,
    encode,
    read_reply,
)
from coordinator.groups.assignor_worker.mirror import Mirror
from coordinator.groups.assignor_worker.named_forms import NamedForms
from coordinator.groups.store.base import StoredRecord
from rebalance.consumer_group.records import Assignment, ConsumerGroupRecord, TargetMemberValue
from rebalance.consumer_group.target import ComputedTarget, TargetInputs
from rebalance.records import Record

log = logging.getLogger("coordinator.assignor_worker")

COMMAND = [sys.executable, "-m", "coordinator.groups.assignor_worker.child"]
"""How the worker process is started."""

GIVE_UP_AFTER = 3
"""Workers dying in a row, none having computed anything, after which the runtime computes in
its assignor thread instead (a worker that cannot start would otherwise be started again at
every computation)."""

PACE_S = 0.003
"""How long the sending thread pauses between two frames of one group's delta, and the
receiving thread between two steps of `named_forms.NAMED_STEP` named forms while priming: each
frame's pickling (or each step) holds the interpreter lock, and without a pause the loop, which
releases the lock at every select and socket call, waits a switch interval to take it back
each time; the whole group's first delta (hundreds of frames at 10,000 x 1M) then stalls
heartbeats (RESULTS.md: figures behind the code)."""


class Precoded:
    """`record_codec.encode`, with a result's target records taken as the worker encoded them:
    the same function's output, for the very assignment objects it was given (checked by
    identity; any other record, such as a static member's target moved to its new member id,
    is encoded here)."""

    __slots__ = ("_changed", "_group_id", "_rows")

    def __init__(
        self, group_id: str, changed: dict[str, Assignment], rows: dict[str, StoredRecord]
    ) -> None:
        self._group_id, self._changed, self._rows = group_id, changed, rows

    def __call__(self, record: Record) -> StoredRecord:
        if type(record) is ConsumerGroupRecord and record.group_id == self._group_id:
            value = record.value
            if type(value) is TargetMemberValue:
                row = self._rows.get(value.member_id)
                if row is not None and self._changed.get(value.member_id) is value.partitions:
                    return row
        return record_codec.encode(record)


Done = Callable[[TargetInputs, ComputedTarget | None, Callable[[Record], StoredRecord]], None]
"""How a computation ends: its inputs, its result (None: failed), how to encode its records."""


@dataclass
class _Job:
    inputs: TargetInputs
    done: Done
    #: filled by the receiving thread
    changed: dict[str, Assignment] = field(default_factory=dict)
    rows: dict[str, StoredRecord] = field(default_factory=dict)


Work = Callable[[], Iterator[bytes]]
"""What the sending thread is handed: it runs it and writes the frames it yields, each pickled
only then, off the loop (a chunk's pickling holds the interpreter lock a few ms at most, and
the loop takes it back in between)."""


def _frame(message: Request) -> Work:
    return lambda: iter((encode(message),))


class AssignorWorker:
    """The parent's side of the worker process. `compute`, `forget`, `peak_rss` and `close` run
    on the loop; a sending thread pickles and writes the frames, a receiving thread reads and
    unpickles the answers and assembles each result (both in steps of a few ms, so the loop
    never waits on the interpreter lock longer than that)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._process: subprocess.Popen[bytes] | None = None
        self._frames: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._mirrors: dict[str, Mirror] = {}
        self._jobs: dict[int, _Job] = {}
        self._stats: dict[int, asyncio.Future[int]] = {}
        #: the receiving thread's (it alone writes it)
        self._named = NamedForms()
        #: primings sent, awaiting their echo: the receiving thread then names their targets
        self._priming: dict[int, TargetInputs] = {}
        self._threads: list[threading.Thread] = []
        #: workers that died in a row, none having computed anything
        self._deaths = 0
        self._next_job = 0
        self._closed = False

    # -- process --------------------------------------------------------------------------
    def _start(self) -> None:
        # the worker imports the very code this process runs, wherever that is
        source = str(Path(__file__).resolve().parents[3])
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": source + (os.pathsep + path if path else "")}
        self._process = process = subprocess.Popen(
            COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            start_new_session=True,  # signals for the server's process group stay there
            env=env,
        )
        self._mirrors.clear()  # a new worker holds nothing
        frames: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._frames = frames
        self._threads = [
            threading.Thread(
                target=_send, args=(process, frames), name="assignor-send", daemon=True
            ),
            threading.Thread(
                target=self._receive, args=(process,), name="assignor-receive", daemon=True
            ),
        ]
        for thread in self._threads:
            thread.start()

    def _receive(self, process: subprocess.Popen[bytes]) -> None:
        pipe = process.stdout
        assert pipe is not None
        call = self._loop.call_soon_threadsafe
        try:
            while (message := read_reply(pipe)) is not None:
                if isinstance(message, Stats):
                    call(self._stats_received, message.job, message.peak_rss_bytes)
                    continue
                if isinstance(message, Primed):
                    primed = self._priming.get(message.job)
                    if primed is not None and primed.group_id in self._mirrors:
                        self._named.by_name(primed, {}, pause_s=PACE_S)
                    self._priming.pop(message.job, None)
                    continue
                job = self._jobs.get(message.job)
                if job is None:
                    continue
                if isinstance(message, Failed):
                    call(self._failed, message.job, message.message)
                    continue
                job.changed.update(message.chunk)
                job.rows.update(message.rows)
                if message.last:
                    named = self._named.by_name(job.inputs, job.changed)
                    computed = ComputedTarget(job.changed, named)
                    call(self._computed, message.job, computed)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            pass
        with contextlib.suppress(OSError):
            pipe.close()
        if not self._closed:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                call(self._died, process)

    def _computed(self, job_id: int, computed: ComputedTarget) -> None:
        job = self._jobs.pop(job_id, None)
        if job is None:
            return
        self._deaths = 0
        mirror = self._mirrors.get(job.inputs.group_id)
        if mirror is not None:  # the worker keeps the targets it computed
            mirror.targets.update(computed.changed)
        job.done(job.inputs, computed, Precoded(job.inputs.group_id, computed.changed, job.rows))

    def _failed(self, job_id: int, error: str) -> None:
        job = self._jobs.pop(job_id, None)
        if job is None:
            return
        inputs = job.inputs
        log.error("assignor failed: %s %d: %s", inputs.group_id, inputs.group_epoch, error)
        self._mirrors.pop(inputs.group_id, None)  # the worker dropped its copy
        job.done(inputs, None, record_codec.encode)

    def _stats_received(self, key: int, peak: int) -> None:
        future = self._stats.pop(key, None)
        if future is not None and not future.done():
            future.set_result(peak)

    def _died(self, process: subprocess.Popen[bytes]) -> None:
        if process is not self._process or self._closed:
            return
        log.error(
            "assignor worker exited with status %s; its computations in flight failed",
            process.wait(),
        )
        self._process = None
        self._deaths += 1
        self._mirrors.clear()
        self._priming.clear()
        jobs, self._jobs = self._jobs, {}
        for job in jobs.values():
            job.done(job.inputs, None, record_codec.encode)
        stats, self._stats = self._stats, {}
        for future in stats.values():
            if not future.done():
                future.set_exception(RuntimeError("the assignor worker exited"))

    async def close(self) -> None:
        self._closed = True
        process, self._process = self._process, None
        if process is None:
            return
        self._frames.put(None)  # the worker stops at the end of its input
        try:
            await asyncio.to_thread(process.wait, 10)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)
        for thread in self._threads:  # both end with the worker's pipes
            await asyncio.to_thread(thread.join)

    @property
    def broken(self) -> bool:
        """True once `GIVE_UP_AFTER` workers in a row died without computing anything (one
        that cannot start, or crashes on every group): the runtime stops using it."""
        return self._deaths >= GIVE_UP_AFTER

    # -- computations ---------------------------------------------------------------------
    def compute(self, inputs: TargetInputs, done: Done) -> None:
        """Start computing `inputs`; `done(inputs, result, encode)` follows on the loop (result
        None: the assignor or the worker failed; `encode`: `record_codec.encode` knowing the
        result's target records already). The loop only queues the work."""
        if self._process is None:
            self._start()
        self._next_job += 1
        job = self._next_job
        self._jobs[job] = _Job(inputs, done)
        self._frames.put(functools.partial(self._job_frames, job, inputs))

    def prime(self, inputs: TargetInputs) -> None:
        """Send the worker `inputs`' group (and name its targets) ahead of its next computation,
        paced, so that computation sends and names only what changed (the runtime primes each
        big group once the node has loaded it). Nothing is computed; nobody waits for it."""
        if self._process is None:
            self._start()
        self._next_job += 1
        token = self._next_job
        self._priming[token] = inputs
        self._frames.put(functools.partial(self._job_frames, token, inputs, prime=True))

    @property
    def priming(self) -> int:
        """Primings not yet finished (sent, run once by the worker, echoed and named)."""
        return len(self._priming)

    def _job_frames(
        self, job: int, inputs: TargetInputs, *, prime: bool = False
    ) -> Iterator[bytes]:
        """The sending thread's part of a computation: what changed since the worker's copy
        (and the mirror brought up to date), then `Compute` (`Prime` if `prime`). Off the
        loop: a walk over the members and their targets in short C-level passes, and
        frames `PACE_S` apart."""
        group_id = inputs.group_id
        change = self._mirrors.setdefault(group_id, Mirror()).update(inputs)
        order = change.order
        deltas = messages.deltas(
            group_id, change.metadata, change.removed, change.upserts, change.targets
        )
        for n, delta in enumerate(deltas):
            if n:
                time.sleep(PACE_S)  # the loop takes the interpreter lock back meanwhile
            yield encode(delta)
        if prime:
            # the order is what the deltas gave (or sent at the next computation, which
            # compares with the mirror as updated here)
            if order is not None:
                yield encode(Order(group_id, order))
            yield encode(Prime(group_id, job, inputs.assignor))
        else:
            yield encode(Compute(group_id, job, inputs.group_epoch, inputs.assignor, order))

    def forget(self, group_id: str) -> None:
        """Drop a group the worker holds (deleted, unloaded)."""
        self._named.forget(group_id)
        if self._mirrors.pop(group_id, None) is not None and self._process is not None:
            self._frames.put(_frame(Forget(group_id)))

    def keep_only(self, alive: Callable[[str], bool]) -> None:
        """Forget every group held for which `alive` is false (the runtime calls it before each
        computation: a deleted or unloaded group's copy goes at the next one)."""
        for group_id in [g for g in self._mirrors if not alive(g)]:
            self.forget(group_id)

    async def peak_rss(self) -> int:
        """The worker's peak resident set so far, in bytes (0: no worker running)."""
        if self._process is None:
            return 0
        self._next_job += 1
        future: asyncio.Future[int] = self._loop.create_future()
        self._stats[self._next_job] = future
        self._frames.put(_frame(StatsRequest(self._next_job)))
        return await future


def _send(process: subprocess.Popen[bytes], frames: queue.SimpleQueue[Work | None]) -> None:
    """The sending thread: frames to the worker in order (a full pipe blocks here, not the
    loop), until None."""
    pipe = process.stdin
    assert pipe is not None
    try:
        while (work := frames.get()) is not None:
            for frame in work():
                pipe.write(frame)
            pipe.flush()
    except (OSError, ValueError):
        pass  # the worker is gone: the receiving thread reports it
    except Exception:  # a bug here: stop the worker, so its computations are reported failed
        log.exception("assignor worker: sending failed")
        process.kill()
    with contextlib.suppress(OSError):
        pipe.close()
