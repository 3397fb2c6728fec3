"""The assignor worker: a child process that computes large consumer groups' target assignments.

A thread does not take a 1M-partition assignment off the loop: it shares the interpreter lock,
and one C-level step of the assignor (a sort, a big container build) holds it throughout, so
heartbeats of every other group wait behind it (`benchmarks/bench_consumer_group_stall.py`,
RESULTS.md). A process shares nothing, but whatever it is sent must be pickled; sending a
group's million partitions at every epoch would cost as much as computing. So the worker keeps
a copy of each big group's inputs, and every computation sends only what changed since the last
one. The loop only queues a computation and applies its result; the rest is two threads' work,
each in steps of a few milliseconds (the loop waits for the interpreter lock at most that long):

* the shell keeps a mirror of what the worker holds per group (its members' `MemberInputs` in
  order, each member's target `Assignment` object, the topic metadata object);
* the sending thread compares a new `TargetInputs` with the mirror, in C-level passes: members
  by equality, targets by identity (records never edit an assignment tuple, they replace it, so
  an identical object is an unchanged target; a false difference only costs a resend), the
  metadata by identity; it pickles the differences in messages of at most `CHUNK_ENTRIES`
  (member, topic) entries and writes them to the pipe (a full pipe blocks it, not the loop), so
  even the first computation after a load, which sends the whole group, is cut small;
* the worker runs the same `compute_target` as the inline path on a `TargetInputs` rebuilt from
  its copy, keeping the `uniform` assignor's previous outcome so that an epoch changing one
  member decodes only that member (`UniformAssignor.assign_incremental`, same result as
  `assign`); it sends back only the changed members' targets, in chunks, and updates its copy
  with them (so does the shell's mirror); it runs at a lower CPU priority than the server;
* the receiving thread unpickles the chunks and rebuilds the event's whole target by name from
  the targets the inputs hold, caching each member's named form by the identity of its
  assignment, so only changed members cost Python work.

The result is then handed to the core (`GroupCoordinatorCore.target_computed`) exactly as a
thread's would be: recorded in the group's order, applied only if its group epoch is still the
group's (a newer epoch supersedes it, and the core starts the next computation). If the worker
dies, its computations in flight are reported failed (the core computes again, from the current
group) and the next one starts a new worker, which is sent every group whole again.

Protocol (both ways: frames of a 4-byte big-endian length and a pickle):

* in: ``("delta", group, metadata | None, removed, upserts, targets)`` (member ids removed,
  `MemberInputs` to replace in place or append, member id -> target or None to drop it),
  ``("compute", group, job, group_epoch, assignor, order | None)`` (the members' order when it
  is not what the deltas gave), ``("order", group, order)`` (the same, when priming),
  ``("primed", group, job, assignor)`` (`uniform` is run once to keep its outcome, then it is
  echoed), ``("forget", group)``, ``("stats", job)``;
* out: ``("result", job, chunk, rows, last)`` (member id -> changed target, and its target
  record as `record_codec` stores it), ``("failed", job, message)``, ``("primed", job)``,
  ``("stats", job, peak_rss_bytes)``.

Priming: the first computation after a load would pickle the whole group and
name every member's target while heartbeats wait on the interpreter lock in small
steps. So the runtime primes the worker with each big group as soon as the node has loaded it
(`prime`): the same deltas, sent paced (`PACE_S` between frames), then ``"primed"``: the worker
runs `uniform` once over its copy so that the next epoch is incremental there as well, and
echoes it, on which the receiving thread makes the named forms, paced too (`priming` counts
until then). A computation requested meanwhile queues behind the priming on the same sending
thread and sends only what changed since, so its result is the same; the first epoch after a
load is then an ordinary one. Any delta of more than one frame is paced the same way (a group
that grows past the offload threshold, a new worker after one died), so the loop is not held
long by one whole-group send either.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import pickle
import queue
import resource
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import is_not, itemgetter, ne
from pathlib import Path
from typing import IO, Any

import assignors
from assignors.balance import BalanceOutcome
from assignors.spec import StaticTopics
from assignors.uniform import UniformAssignor
from coordinator.groups import record_codec
from coordinator.groups.store.base import StoredRecord
from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.pair_forms import PairForms
from rebalance.consumer_group.records import Assignment, ConsumerGroupRecord, TargetMemberValue
from rebalance.consumer_group.target import (
    ComputedTarget,
    TargetInputs,
    compute_target,
)
from rebalance.records import Record
from rebalance.topics import TopicMetadata

log = logging.getLogger("coordinator.assignor_worker")

FRAME_HEADER = struct.Struct(">I")

CHUNK_ENTRIES = 5_000
"""Most (member, topic) entries per message: pickling or unpickling one (a single C call that
holds the interpreter lock) stays short."""

COMMAND = [sys.executable, "-m", "coordinator.groups.assignor_worker"]
"""How the worker process is started."""

GIVE_UP_AFTER = 3
"""Workers dying in a row, none having computed anything, after which the runtime computes in
its assignor thread instead (a worker that cannot start would otherwise be started again at
every computation)."""

NICENESS = 5

PACE_S = 0.003
"""How long the sending thread pauses between two frames of one group's delta, and the
receiving thread between two steps of `NAMED_STEP` named forms while priming: each frame's
pickling (or each step) holds the interpreter lock, and without a pause the loop, which
releases the lock at every select and socket call, waits a switch interval to take it
back each time; the whole group's first delta (hundreds of frames at 10,000 x 1M) then stalls
heartbeats (RESULTS.md: figures behind the code)."""

NAMED_STEP = 100
"""Members whose named form the receiving thread makes between two pauses while priming
(one short hold of the interpreter lock)."""
"""How much lower the worker's CPU priority is than the server's (`os.nice`)."""

Named = tuple[tuple[str, tuple[int, ...]], ...]

_first = itemgetter(0)


def _weight_of_target(assignment: Assignment | None) -> int:
    return 1 + (len(assignment) if assignment else 0)


# ============================================================================ the child process
class _Incremental:
    """`assignors.assign` for one group, keeping `uniform`'s outcome from epoch to epoch."""

    def __init__(self) -> None:
        self.previous: BalanceOutcome | None = None

    def __call__(
        self,
        name: str,
        subscriptions: Mapping[str, list[str]],
        partitions: Mapping[str, int],
        *,
        owned: Mapping[str, list[assignors.TopicPartition]],
        member_racks: Mapping[str, str | None],
        instance_ids: Mapping[str, str],
    ) -> assignors.GroupAssignment:
        assignor = assignors.get(name)
        if not isinstance(assignor, UniformAssignor):
            self.previous = None
            return assignors.assign(
                name,
                subscriptions,
                partitions,
                owned=owned,
                member_racks=member_racks,
                instance_ids=instance_ids,
            )
        spec = assignors.group_spec(
            subscriptions, owned=owned, member_racks=member_racks, instance_ids=instance_ids
        )
        outcome = assignor.assign_incremental(spec, StaticTopics(dict(partitions)), self.previous)
        self.previous = outcome
        # what `assignors.assign` returns for an assignor with sorted output
        return {member: outcome.assignment.get(member) or [] for member in spec.members}


@dataclass
class _GroupCopy:
    """The worker's copy of one group's inputs."""

    metadata: TopicMetadata = field(default_factory=TopicMetadata)
    members: dict[str, MemberInputs] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    run: _Incremental = field(default_factory=_Incremental)
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)

    def delta(
        self,
        metadata: TopicMetadata | None,
        removed: list[str],
        upserts: list[MemberInputs],
        targets: dict[str, Assignment | None],
    ) -> None:
        if metadata is not None:
            self.metadata = metadata
        for member_id in removed:
            self.members.pop(member_id, None)
        shared = self.subscriptions
        for member in upserts:
            # one tuple per distinct subscription, not one per member (their names arrive as
            # separate strings: ~60 MB at 10,000 members x 100 topics)
            names = shared.setdefault(member.topic_names, member.topic_names)
            self.members[member.member_id] = member._replace(topic_names=names)
        for member_id, assignment in targets.items():
            if assignment is None:
                self.targets.pop(member_id, None)
            else:
                self.targets[member_id] = assignment

    def warm(self, group_id: str, assignor: str) -> None:
        """Run `uniform` once over the copy and keep only its outcome, so that the next epoch
        decodes only what changed (`assign_incremental` gives `assign`'s result whatever the
        outcome it is passed). The targets stay as the shell sent them: they are its mirror's.
        Any other assignor keeps nothing, so nothing is run."""
        try:
            if not isinstance(assignors.get(assignor), UniformAssignor):
                return
            members = tuple(self.members.values())
            inputs = TargetInputs(group_id, 0, assignor, self.metadata, members, self.targets)
            compute_target(inputs, self.run, named=False)
        except Exception:  # the computation that follows meets the same failure and reports it
            self.run.previous = None

    def reorder(self, order: list[str]) -> None:
        self.members = {member_id: self.members[member_id] for member_id in order}

    def compute(
        self, group_id: str, epoch: int, assignor: str, order: list[str] | None
    ) -> dict[str, Assignment]:
        if order is not None:
            self.reorder(order)
        inputs = TargetInputs(
            group_id,
            epoch,
            assignor,
            self.metadata,
            tuple(self.members.values()),
            self.targets,
        )
        changed = compute_target(inputs, self.run, named=False).changed
        self.targets.update(changed)
        return changed


def _chunks(changed: dict[str, Assignment]) -> Iterator[dict[str, Assignment]]:
    chunk: dict[str, Assignment] = {}
    weight = 0
    for member_id, assignment in changed.items():
        chunk[member_id] = assignment
        weight += _weight_of_target(assignment)
        if weight >= CHUNK_ENTRIES:
            yield chunk
            chunk, weight = {}, 0
    yield chunk


def _rows(group_id: str, chunk: dict[str, Assignment]) -> dict[str, StoredRecord]:
    """The stored rows of the chunk's target records, encoded here rather than on the server's
    loop (JSON for 10,000 changed targets is long work)."""
    return {
        member_id: record_codec.encode(
            ConsumerGroupRecord(group_id, TargetMemberValue(member_id, assignment))
        )
        for member_id, assignment in chunk.items()
    }


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = stream.read(FRAME_HEADER.size)
    if len(header) < FRAME_HEADER.size:
        return None
    (length,) = FRAME_HEADER.unpack(header)
    data = stream.read(length)
    if len(data) < length:
        return None
    return data


def _write_frame(stream: IO[bytes], message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    stream.write(FRAME_HEADER.pack(len(data)) + data)


def _peak_rss() -> int:
    """This process's peak resident set in bytes: the kernel's VmHWM, which starts afresh at
    exec (`ru_maxrss` does not: it would report the server's size at the fork)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def serve(inbound: IO[bytes], outbound: IO[bytes]) -> None:
    """The worker's loop: messages in until the input ends."""
    with contextlib.suppress(OSError):
        # Below the server's loop for the CPU: on a busy machine the loop answering heartbeats
        # runs first and a target lands later, rather than the reverse.
        os.nice(NICENESS)
    groups: dict[str, _GroupCopy] = {}
    while (frame := _read_frame(inbound)) is not None:
        message = pickle.loads(frame)
        kind = message[0]
        if kind == "delta":
            _, group_id, metadata, removed, upserts, targets = message
            groups.setdefault(group_id, _GroupCopy()).delta(metadata, removed, upserts, targets)
        elif kind == "compute":
            _, group_id, job, epoch, assignor, order = message
            try:
                changed = groups.setdefault(group_id, _GroupCopy()).compute(
                    group_id, epoch, assignor, order
                )
            except Exception as exc:  # the assignor's failure is the core's to handle
                groups.pop(group_id, None)  # the shell forgets its mirror too
                _write_frame(outbound, ("failed", job, repr(exc)))
            else:
                *rest, last = list(_chunks(changed))
                for chunk in rest:
                    _write_frame(outbound, ("result", job, chunk, _rows(group_id, chunk), False))
                _write_frame(outbound, ("result", job, last, _rows(group_id, last), True))
        elif kind == "order":
            groups.setdefault(message[1], _GroupCopy()).reorder(message[2])
        elif kind == "primed":  # every delta before it is applied: the shell may name
            _, group_id, job, assignor = message
            copy = groups.get(group_id)
            if copy is not None:
                copy.warm(group_id, assignor)
            _write_frame(outbound, ("primed", job))
        elif kind == "forget":
            groups.pop(message[1], None)
        elif kind == "stats":
            peak = _peak_rss()
            _write_frame(outbound, ("stats", message[1], peak))
        outbound.flush()


# ================================================================================= the shell
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
class _Mirror:
    """What the worker holds of one group, as the shell last sent it."""

    metadata: TopicMetadata | None = None
    members: dict[str, MemberInputs] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    #: one tuple per distinct subscription sent
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)


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


def _encode(message: tuple[Any, ...]) -> bytes:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    return FRAME_HEADER.pack(len(data)) + data


def _frame(message: tuple[Any, ...]) -> Work:
    return lambda: iter((_encode(message),))


def _deltas(
    group_id: str,
    metadata: TopicMetadata | None,
    removed: list[str],
    upserts: list[MemberInputs],
    targets: dict[str, Assignment | None],
) -> Iterator[tuple[Any, ...]]:
    """The "delta" messages, each of at most about `CHUNK_ENTRIES` entries (the first carries
    the metadata and the removals); at least one."""
    members: list[MemberInputs] = []
    chunk: dict[str, Assignment | None] = {}
    weight = 0
    first = True
    pickled: set[int] = set()  # subscriptions in this message: the pickle holds each once

    def flush() -> tuple[Any, ...]:
        nonlocal members, chunk, weight, first
        message = (
            "delta",
            group_id,
            metadata if first else None,
            removed if first else [],
            members,
            chunk,
        )
        members, chunk, weight, first = [], {}, 0, False
        pickled.clear()
        return message

    for member in upserts:
        members.append(member)
        weight += 1
        if id(member.topic_names) not in pickled:
            pickled.add(id(member.topic_names))
            weight += len(member.topic_names)
        if weight >= CHUNK_ENTRIES:
            yield flush()
    for member_id, assignment in targets.items():
        chunk[member_id] = assignment
        weight += _weight_of_target(assignment)
        if weight >= CHUNK_ENTRIES:
            yield flush()
    if first or members or chunk:
        yield flush()


class AssignorWorker:
    """The shell's side of the worker process. `compute`, `forget`, `peak_rss` and `close` run
    on the loop; a sending thread pickles and writes the frames, a receiving thread reads and
    unpickles the answers and assembles each result (both in steps of a few ms, so the loop
    never waits on the interpreter lock longer than that)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._process: subprocess.Popen[bytes] | None = None
        self._frames: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._mirrors: dict[str, _Mirror] = {}
        self._jobs: dict[int, _Job] = {}
        self._stats: dict[int, asyncio.Future[int]] = {}
        #: group -> (member id -> assignment, member id -> its named form): the receiving
        #: thread's cache of the target event's pieces, valid for the very assignment object
        #: each was made from (members gone stay until the group is forgotten).
        self._named: dict[str, tuple[dict[str, Assignment], dict[str, Named]]] = {}
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
        source = str(Path(__file__).resolve().parents[2])
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
            while (frame := _read_frame(pipe)) is not None:
                message = pickle.loads(frame)
                kind = message[0]
                if kind == "stats":
                    call(self._stats_received, message[1], message[2])
                    continue
                if kind == "primed":
                    primed = self._priming.get(message[1])
                    if primed is not None and primed.group_id in self._mirrors:
                        self._named_forms(primed, {}, paced=True)
                    self._priming.pop(message[1], None)
                    continue
                job = self._jobs.get(message[1])
                if job is None:
                    continue
                if kind == "failed":
                    call(self._failed, message[1], message[2])
                    continue
                _, job_id, chunk, rows, last = message
                job.changed.update(chunk)
                job.rows.update(rows)
                if last:
                    computed = ComputedTarget(job.changed, self._by_name(job))
                    call(self._computed, job_id, computed)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            pass
        with contextlib.suppress(OSError):
            pipe.close()
        if not self._closed:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                call(self._died, process)

    def _by_name(self, job: _Job) -> dict[str, Sequence[tuple[str, tuple[int, ...]]]]:
        """The whole target by topic name (the event's), as `compute_target` gives it: every
        member in id order. A member's named form is made again only if its assignment is not
        the object it was made from; the rest are C-level passes, where a Python step per member
        held the interpreter lock far longer (RESULTS.md: figures behind the code)."""
        return self._named_forms(job.inputs, job.changed, paced=False)

    def _named_forms(
        self, inputs: TargetInputs, changed: dict[str, Assignment], *, paced: bool
    ) -> dict[str, Sequence[tuple[str, tuple[int, ...]]]]:
        """`_by_name` of `inputs` with `changed` over its targets (the receiving thread only:
        it alone writes the cache). ``paced``: pause `PACE_S` every `NAMED_STEP` members made
        (priming, which nobody waits for)."""
        made, named = self._named.setdefault(inputs.group_id, ({}, {}))
        ids = sorted(map(_first, inputs.members))
        now = dict(inputs.targets)
        now.update(changed)
        assignments = list(map(now.get, ids, repeat(())))
        stale = list(compress(ids, map(is_not, map(made.get, ids), assignments)))
        if stale:
            forms = PairForms(inputs.metadata)
            for n, member_id in enumerate(stale, 1):
                if paced and n % NAMED_STEP == 0:
                    time.sleep(PACE_S)
                assignment = now.get(member_id, ())
                made[member_id] = assignment
                # a tuple: once the collector has seen that its items are all atomic it stops
                # tracking it, so a full collection does not walk a million cached pairs
                named[member_id] = tuple(forms.named(assignment))
        return dict(zip(ids, map(named.__getitem__, ids), strict=True))

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
        (and the mirror brought up to date), then "compute" ("primed" if `prime`). Off the
        loop: a walk over the members and their targets in short C-level passes, and
        frames `PACE_S` apart."""
        group_id = inputs.group_id
        mirror = self._mirrors.setdefault(group_id, _Mirror())
        metadata = None if inputs.metadata is mirror.metadata else inputs.metadata
        mirror.metadata = inputs.metadata
        # members: removed, then replaced in place or appended (as the worker applies them)
        known = mirror.members
        members = inputs.members
        ids = list(map(_first, members))
        present = dict(zip(ids, members, strict=True))
        removed = [member_id for member_id in known if member_id not in present]
        for member_id in removed:
            del known[member_id]
        upserts = list(compress(members, map(ne, map(known.get, ids), members)))
        for member in upserts:
            known[member.member_id] = member
        if upserts:
            # Equal subscriptions sent as one tuple: members usually share one, but each holds
            # its own copy (decoded from its own request), and a group's first delta would
            # otherwise carry 10,000 x 100 topic names.
            shared = mirror.subscriptions
            upserts = [
                m._replace(topic_names=shared.setdefault(m.topic_names, m.topic_names))
                for m in upserts
            ]
        order: list[str] | None = None
        if list(known) != ids:
            order = ids  # a member left and came back: its place moved
            mirror.members = present
        # targets: by identity
        held = mirror.targets
        new_targets = inputs.targets
        targets: dict[str, Assignment | None] = {
            member_id: None for member_id in held if member_id not in new_targets
        }
        for member_id in targets:
            del held[member_id]
        keys = list(new_targets)
        values = list(new_targets.values())
        for member_id in compress(keys, map(is_not, map(held.get, keys), values)):
            targets[member_id] = held[member_id] = new_targets[member_id]
        for n, message in enumerate(_deltas(group_id, metadata, removed, upserts, targets)):
            if n:
                time.sleep(PACE_S)  # the loop takes the interpreter lock back meanwhile
            yield _encode(message)
        if prime:
            # the order is what the deltas gave (or sent at the next computation, which
            # compares with the mirror as updated here)
            if order is not None:
                yield _encode(("order", group_id, order))
            yield _encode(("primed", group_id, job, inputs.assignor))
        else:
            yield _encode(("compute", group_id, job, inputs.group_epoch, inputs.assignor, order))

    def forget(self, group_id: str) -> None:
        """Drop a group the worker holds (deleted, unloaded)."""
        self._named.pop(group_id, None)
        if self._mirrors.pop(group_id, None) is not None and self._process is not None:
            self._frames.put(_frame(("forget", group_id)))

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
        self._frames.put(_frame(("stats", self._next_job)))
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


def main() -> None:
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
