"""Group coordinator over loopback: heartbeats/s (one at a time and pipelined), durable offset
commits/s, rebalance latency and its growth from 10 to 5000 members, server memory per connected
member and of the idle server.

The server (our node with the group coordinator, SQLite store in a temp dir) runs in its own
process; the load generator runs here with one connection per member. The peer is a bare
length-prefixed echo server measured in the same run with the same frames and the same number of
requests in flight: the most an asyncio server in Python does per request on this machine.
Besides requests/s, the CPU time of each server process per request is read from /proc: on a
shared machine it is far steadier than wall-clock rates.

Run: .venv/bin/python benchmarks/bench_groups.py [--runs 5] [--seconds 3] [--members 200]
(BENCH_PROFILE=FILE: the server process runs under cProfile and dumps its stats there;
BENCH_TRACEMALLOC=FILE: what it allocated while the first group formed, by traceback.)
Numbers are medians over runs; they go to benchmarks/RESULTS.md under "## Server".
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import ctypes
import gc
import multiprocessing
import os
import re
import sqlite3
import statistics
import struct
import sys
import tempfile
import time
import tracemalloc
import typing
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from kio.schema.offset_commit.v8.response import OffsetCommitResponse

from bench_wire import _echo, machine
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.groups.store.sqlite import SqliteStore
from coordinator.node.collector import tune_for_serving
from coordinator.testing.server import running_server
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.codec import (
    build_request,
    decode_response,
    encode_request,
)
from rebalance.config import CoordinatorConfig

LENGTH = struct.Struct(">i")
#: Seconds the server is left to settle after a group formed before its memory is read: the
#: serving process trims its heap (`coordinator.node.heap_trim`) within a second of a burst.
SETTLE = 1.5
NO_ERROR = b"\x00\x00"
SUBSCRIPTION = struct.pack(">hih", 0, 1, 6) + b"orders" + struct.pack(">i", -1)
GROUP_CONFIG = CoordinatorConfig.from_properties(
    {"group.initial.rebalance.delay.ms": "100", "group.min.session.timeout.ms": "1000"}
)


# ------------------------------------------------------------------------------ servers
async def _serve(kind: str, ready: Connection) -> None:
    if kind == "echo":
        server = await asyncio.start_server(_echo, "127.0.0.1", 0, backlog=4096)
        ready.send(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()
    with tempfile.TemporaryDirectory() as scratch:
        # "groups-no-events": the same node without its event log (bench_event_log.py).
        groups = GroupCoordinatorExtension(GROUP_CONFIG, seed=1, event_log=kind == "groups")
        # `commit_load` commits to orders' partitions: offsets are taken only for partitions
        # that exist.
        topics = [("orders", 10)]
        async with running_server(data_dir=Path(scratch), groups=groups, topics=topics) as node:
            tune_for_serving()  # as `rebalance serve` does once started
            collecting = _CollectionClock()
            gc.callbacks.append(collecting)
            # BENCH_PROFILE=FILE: cProfile the server from its first CPU reading on (what is
            # measured), its stats written to FILE at every later reading.
            profile_to = os.environ.get("BENCH_PROFILE")
            profiler = cProfile.Profile() if profile_to else None
            # BENCH_TRACEMALLOC=FILE: what the server allocated between two memory readings
            # (around forming a group), largest first by line, written to FILE.
            trace_to = os.environ.get("BENCH_TRACEMALLOC")
            snapshots: list[tracemalloc.Snapshot] = []
            if trace_to:
                tracemalloc.start(4)
            ready.send(node.port)
            while True:
                command = await asyncio.to_thread(ready.recv)
                if command == "rss_only":  # (no tracemalloc snapshot)
                    ready.send(_rss_bytes())
                elif command == "rss":
                    if trace_to:
                        if os.environ.get("BENCH_GC_FIRST"):
                            gc.collect()
                        snapshots.append(tracemalloc.take_snapshot())
                        if len(snapshots) == 2:
                            _write_allocations(snapshots, trace_to)
                    ready.send(_rss_bytes())
                elif command == "memory":  # where this process's memory is (--only memory)
                    ready.send(memory_breakdown())
                elif command == "trim":  # glibc's malloc_trim(0), then the breakdown again
                    _malloc_trim()
                    ready.send(memory_breakdown())
                elif command == "all_rss":  # this process and its event log writer
                    events = groups.runtime.events if groups.runtime else None
                    pid = events.writer_pid if events else None
                    ready.send(_rss_bytes() + (_rss_bytes(pid) if pid else 0))
                elif command == "store":  # the store's file and counters (fsyncs, records)
                    store = groups.runtime.store if groups.runtime else None
                    assert isinstance(store, SqliteStore)
                    stats = store.stats
                    writer = store._writer.native_id or 0  # its CPU: /proc/PID/task/TID
                    ready.send(
                        StoreReading(
                            str(store.path),
                            stats.transactions,
                            stats.records,
                            # (absent from stores before they were counted: an older
                            # src/ on PYTHONPATH, the "before" of a comparison)
                            getattr(stats, "transaction_seconds", 0.0),
                            getattr(stats, "commit_seconds", 0.0),
                            writer,
                        )
                    )
                elif command == "writer_cpu":  # seconds of CPU of the event log's writer
                    events = groups.runtime.events if groups.runtime else None
                    pid = events.writer_pid if events else None
                    ready.send(_process_cpu(pid) if pid else 0.0)
                else:  # "cpu": seconds of CPU this process has used
                    if profiler is not None and profile_to:
                        profiler.dump_stats(profile_to)  # (this disables it)
                        profiler.enable()
                    # CLOCK_PROCESS_CPUTIME_ID, all threads, in ns (`os.times` counts 10 ms
                    # ticks: a round's CPU read 70 or 80 ms, nothing between); the event
                    # loop's thread alone (the rest is the store's writer thread and the
                    # thread that reads this pipe); the garbage collector's share.
                    ready.send((time.process_time(), time.thread_time(), collecting.seconds))


class _CollectionClock:
    """A `gc.callbacks` entry that adds up the time the collector runs (thread CPU)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.seconds += time.thread_time() - self._started


def _write_allocations(snapshots: list[tracemalloc.Snapshot], path: str) -> None:
    grown = snapshots[1].compare_to(snapshots[0], "traceback")
    with open(path, "w") as out:
        total = sum(stat.size_diff for stat in grown)
        out.write(f"{total} bytes in all\n")
        for stat in grown[: int(os.environ.get("BENCH_TRACE_LINES", "40"))]:
            out.write(f"{stat.size_diff:>10} bytes {stat.count_diff:>7} blocks\n")
            for line in stat.traceback.format():
                out.write(f"    {line}\n")


def _process_cpu(pid: int | str) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_breakdown() -> dict[str, int]:
    """This process's resident memory and where its allocators hold it (bytes): `pymalloc`,
    the 1 MiB arenas of Python's small-object allocator, of which `pymalloc_used` is in
    allocated blocks; `malloc_used` and `malloc_free`, glibc's heap in use and free (all its
    arenas, mmapped chunks counted as used); `traced`, the live Python allocations when
    tracemalloc runs."""
    figures = {"rss": _rss_bytes()}
    figures.update(_pymalloc_stats())
    figures.update(_mallinfo())
    if tracemalloc.is_tracing():
        figures["traced"] = tracemalloc.get_traced_memory()[0]
    return figures


def _pymalloc_stats() -> dict[str, int]:
    """`sys._debugmallocstats` (written by C to stderr) parsed for its arena totals."""
    saved = os.dup(2)
    with tempfile.TemporaryFile("w+") as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()
    figures = {}
    for name, pattern in (
        ("pymalloc", r"arenas \* \d+ bytes/arena\s+=\s+([\d,]+)"),
        ("pymalloc_used", r"# bytes in allocated blocks\s+=\s+([\d,]+)"),
        ("pymalloc_free_blocks", r"# bytes in available blocks\s+=\s+([\d,]+)"),
        ("pymalloc_free_pools", r"unused pools \* \d+ bytes\s+=\s+([\d,]+)"),
    ):
        found = re.search(pattern, text)
        figures[name] = int(found.group(1).replace(",", "")) if found else 0
    return figures


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):  # not glibc >= 2.33
        return None
    return libc


def _mallinfo() -> dict[str, int]:
    libc = _libc()
    if libc is None:
        return {}
    info = libc.mallinfo2()
    return {"malloc_used": info.uordblks + info.hblkhd, "malloc_free": info.fordblks}


def _malloc_trim() -> None:
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def _rss_bytes(pid: int | None = None) -> int:
    with open(f"/proc/{pid or os.getpid()}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _server_process(kind: str, use_uvloop: bool, ready: Connection) -> None:
    if use_uvloop:
        import uvloop

        uvloop.run(_serve(kind, ready))
    else:
        asyncio.run(_serve(kind, ready))


class StoreReading(typing.NamedTuple):
    """The server's store: its file, its counters so far, its writer thread's id."""

    path: str
    transactions: int
    """One fsync each (WAL, synchronous=FULL)."""
    records: int
    transaction_seconds: float
    """Wall time inside transactions, and of it in COMMIT (the fsync)."""
    commit_seconds: float
    writer: int


class Server:
    def __init__(self, kind: str, use_uvloop: bool = False) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipe, child = context.Pipe()
        # `stop` kills it (its event log writer then sees its input end and exits), and every
        # benchmark stops its servers in a `finally`.
        self.process = context.Process(target=_server_process, args=(kind, use_uvloop, child))
        self.process.start()
        self.port: int = self.pipe.recv()

    def rss(self, snapshot: bool = True) -> int:
        """Resident memory of the server process (`snapshot`: a tracemalloc snapshot too,
        under BENCH_TRACEMALLOC)."""
        self.pipe.send("rss" if snapshot else "rss_only")
        value: int = self.pipe.recv()
        return value

    def memory(self, trim: bool = False) -> dict[str, int]:
        """`memory_breakdown` of the server process (`trim`: after glibc's malloc_trim)."""
        self.pipe.send("trim" if trim else "memory")
        value: dict[str, int] = self.pipe.recv()
        return value

    def all_rss(self) -> int:
        """Resident memory of the server and its event log writer process."""
        self.pipe.send("all_rss")
        value: int = self.pipe.recv()
        return value

    def process_cpu(self) -> float:
        """CPU seconds of the server process read from /proc (works for the echo server too)."""
        assert self.process.pid is not None
        return _process_cpu(self.process.pid)

    def cpu(self) -> float:
        """CPU seconds of the server process (all threads)."""
        return self.cpu_and_loop()[0]

    def cpu_and_loop(self) -> tuple[float, float, float]:
        """CPU seconds of the server process (all threads), of its event loop's thread, and
        of its garbage collections (so far)."""
        self.pipe.send("cpu")
        value: tuple[float, float, float] = self.pipe.recv()
        return value

    def store(self) -> StoreReading:
        self.pipe.send("store")
        value: StoreReading = self.pipe.recv()
        return value

    def thread_cpu(self, thread: int) -> float:
        """CPU seconds of one thread of the server process."""
        return _process_cpu(f"{self.process.pid}/task/{thread}")

    def writer_cpu(self) -> float:
        self.pipe.send("writer_cpu")
        value: float = self.pipe.recv()
        return value

    def stop(self) -> None:
        self.process.kill()
        self.process.join()


# ------------------------------------------------------------------------------ client
class Conn(asyncio.Protocol):
    """One member's connection, kept cheap for the load generator (one Python process serves
    every member, so its cost per response caps what the benchmark can see): a protocol that
    splits response frames itself, handing each to `on_frame` when set (callback chains, no
    task switch per response) or else to whoever awaits `next_frame`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.correlation = 0
        self._buffer = bytearray()
        self._frames: collections.deque[bytes] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[bytes]] = collections.deque()
        self.on_frame: Callable[[bytes], None] | None = None

    @classmethod
    async def open(cls, port: int) -> Conn:
        _transport, conn = await asyncio.get_running_loop().create_connection(
            cls, "127.0.0.1", port
        )
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        position, size = 0, len(buffer)
        while size - position >= 4:
            (length,) = LENGTH.unpack_from(buffer, position)
            end = position + 4 + length
            if end > size:
                break
            frame = bytes(buffer[position + 4 : end])
            position = end
            if self.on_frame is not None:
                self.on_frame(frame)
            elif self._waiters:
                self._waiters.popleft().set_result(frame)
            else:
                self._frames.append(frame)
        if position:
            del buffer[:position]

    def connection_lost(self, exc: Exception | None) -> None:
        while self._waiters:
            self._waiters.popleft().set_exception(ConnectionError("connection closed"))

    async def next_frame(self) -> bytes:
        if self._frames:
            return self._frames.popleft()
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return await waiter

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    async def call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        self.correlation += 1
        self.write(encode_request(build_request(api_key, version, values), self.correlation, "b"))
        return await self.read(api_key, version)

    async def read(self, api_key: int, version: int) -> Any:
        return decode_response(await self.next_frame(), api_key, version)[1]

    async def raw(self, frame: bytes) -> bytes:
        self.write(frame)
        return await self.next_frame()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def subscription(user_data: int) -> bytes:
    """A consumer's subscription to orders carrying `user_data` (a 4-byte int): metadata that
    differs from the last generation's, as a rejoin after a change has."""
    return SUBSCRIPTION[:-4] + struct.pack(">ii", 4, user_data)


def join_values(group: str, member_id: str, metadata: bytes = SUBSCRIPTION) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout": 30_000,
        "rebalance_timeout": 30_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],
    }


async def form_group(conns: list[Conn], group: str) -> tuple[list[str], int, str]:
    """All join (v3: one step), leader syncs; returns (ids, generation, leader). Every member
    must land in one generation (the initial rebalance delay must outlast sending the joins)."""
    join = encode_request(build_request(ApiKey.JOIN_GROUP, 3, join_values(group, "")), 1, "b")
    for c in conns:  # (encoded once and written in one go: the joins arrive together)
        c.write(join)
    replies = await asyncio.gather(*(c.read(ApiKey.JOIN_GROUP, 3) for c in conns))
    ids = [r.member_id for r in replies]
    generation, leader = replies[0].generation_id, replies[0].leader
    if any(r.error_code or r.generation_id != generation for r in replies):
        raise RuntimeError(f"group {group}: the joins did not form one generation")
    synced = await asyncio.gather(
        *(
            c.call(
                14,
                3,
                {
                    "group_id": group,
                    "generation_id": generation,
                    "member_id": m,
                    "group_instance_id": None,
                    "assignments": [{"member_id": x, "assignment": b"a" * 24} for x in ids]
                    if m == leader
                    else [],
                },
            )
            for c, m in zip(conns, ids, strict=True)
        )
    )
    if any(r.error_code for r in synced):
        raise RuntimeError(f"group {group}: a SyncGroup was refused")
    return ids, generation, leader


async def rebalance_round(
    conns: list[Conn],
    group: str,
    ids: list[str],
    generation: int,
    leader: str,
    assignments: dict[str, bytes] | None = None,
    parked: bool = True,
    metadata: bytes = SUBSCRIPTION,
) -> float:
    """Everybody rejoins; ms from the last JoinGroup sent to the last SyncGroup reply (not
    `parked`: all joins sent at once, ms from the first JoinGroup sent). A broker that answers
    a follower's rejoin of a stable group with unchanged `metadata` at once (Kafka does) needs
    new metadata each round (`subscription`) to see the joins as a rebalance.

    Every request is encoded before the clock starts (the next generation and the leader are
    known: a rejoining leader stays leader), so the figure is the server's work plus loopback,
    not the load generator's encoding. The leader hands out `assignments` (member -> bytes), or
    24 opaque bytes each.
    """
    handed_out = assignments or dict.fromkeys(ids, b"b" * 24)
    joins = [
        encode_request(build_request(ApiKey.JOIN_GROUP, 3, join_values(group, m, metadata)), 1, "b")
        for m in ids
    ]
    syncs = [
        encode_request(
            build_request(
                ApiKey.SYNC_GROUP,
                3,
                {
                    "group_id": group,
                    "generation_id": generation + 1,
                    "member_id": m,
                    "group_instance_id": None,
                    "assignments": [{"member_id": x, "assignment": handed_out[x]} for x in ids]
                    if m == leader
                    else [],
                },
            ),
            2,
            "b",
        )
        for m in ids
    ]

    # Each member sends its SyncGroup from the callback that receives its JoinGroup answer,
    # and the clock stops in the callback that receives the last SyncGroup answer.
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[float] = loop.create_future()
    waiting = [len(conns)]

    failed: list[bytes] = []

    def chain(conn: Conn, sync: bytes) -> Callable[[bytes], None]:
        # JoinGroup v3 and SyncGroup v3 answers: correlation id, throttle time, error code.
        def joined(frame: bytes) -> None:
            if frame[8:10] != NO_ERROR:
                failed.append(frame)
            conn.on_frame = synced
            conn.write(sync)

        def synced(frame: bytes) -> None:
            if frame[8:10] != NO_ERROR:
                failed.append(frame)
            conn.on_frame = None
            waiting[0] -= 1
            if not waiting[0]:
                finished.set_result(time.perf_counter())

        return joined

    for conn, sync in zip(conns, syncs, strict=True):
        conn.on_frame = chain(conn, sync)
    if not parked:
        started = time.perf_counter()
        for conn, join in zip(conns, joins, strict=True):
            conn.write(join)
    else:  # all but one rejoin first; their joins park until the last one arrives
        for conn, join in zip(conns[:-1], joins[:-1], strict=True):
            conn.write(join)
        await asyncio.sleep(0.3 + len(conns) / 2000)  # let every parked join reach the server
        started = time.perf_counter()
        conns[-1].write(joins[-1])
    ended = await finished
    if failed:
        codes = sorted({struct.unpack(">h", frame[8:10])[0] for frame in failed})
        raise RuntimeError(f"{len(failed)} answers of the round carried an error: codes {codes}")
    return (ended - started) * 1000


@dataclass
class Throughput:
    per_second: float
    cpu_us: float
    """Server CPU per request (µs), from /proc."""


class Target(typing.Protocol):
    """A server under load: its port and the CPU seconds its processes have used."""

    port: int

    def process_cpu(self) -> float: ...


async def heartbeat_load(
    server: Target,
    groups: int,
    per_group: int,
    seconds: float,
    depth: int = 1,
    prefix: str = "hb",
) -> Throughput:
    """Heartbeats/s of formed groups (named `prefix`-N), `depth` requests in flight per
    connection."""
    port = server.port
    conns = [await Conn.open(port) for _ in range(groups * per_group)]
    frames: list[bytes] = []
    formed = await asyncio.gather(*(
        form_group(conns[g * per_group : (g + 1) * per_group], f"{prefix}-{g}")
        for g in range(groups)
    ))  # fmt: skip
    for g, (ids, generation, _) in enumerate(formed):
        for m in ids:
            values = {"group_id": f"{prefix}-{g}", "generation_id": generation, "member_id": m}
            frames.append(encode_request(build_request(ApiKey.HEARTBEAT, 1, values), 7, "b"))
    result = await _measured(server, conns, frames, seconds, depth)
    for c in conns:
        c.close()
    return result


async def _measured(
    server: Target, conns: list[Conn], frames: list[bytes], seconds: float, depth: int
) -> Throughput:
    cpu_before = server.process_cpu()
    rate, requests = await _hammer(conns, frames, seconds, depth)
    cpu = server.process_cpu() - cpu_before
    return Throughput(rate, cpu * 1e6 / max(requests, 1))


async def _hammer(
    conns: list[Conn], frames: list[bytes], seconds: float, depth: int = 1
) -> tuple[float, int]:
    """Requests/s with `depth` requests outstanding per connection (1: one at a time; more:
    pipelined, a new request sent as each response arrives)."""
    counts: list[int] = []
    started = time.perf_counter()
    stop_at = started + seconds

    async def loop(conn: Conn, frame: bytes) -> None:
        done = 0
        if depth > 1:
            conn.write(frame * (depth - 1))
        while time.perf_counter() < stop_at:
            await conn.raw(frame)
            done += 1
        for _ in range(depth - 1):  # drain the ones still in flight
            await conn.next_frame()
            done += 1
        counts.append(done)

    await asyncio.gather(*(loop(c, f) for c, f in zip(conns, frames, strict=True)))
    return sum(counts) / (time.perf_counter() - started), sum(counts)


async def echo_load(
    server: Server, frames: list[bytes], seconds: float, depth: int = 1
) -> Throughput:
    conns = [await Conn.open(server.port) for _ in frames]
    result = await _measured(server, conns, frames, seconds, depth)
    for c in conns:
        c.close()
    return result


@dataclass
class CommitRun:
    offsets_per_second: float
    commits_per_second: float
    fsyncs_per_second: float
    """The server store's transactions per second (WAL, synchronous=FULL: one fsync each)."""
    offsets_per_fsync: float
    cpu_us: float
    """Server CPU per commit request (µs; the process, its SQLite writer thread included)."""
    writer_cpu_us: float
    """Of which the store's writer thread (SQLite's statements, commit and fsync call)."""
    transaction_ms: float
    """Wall time of one transaction, BEGIN to the end of COMMIT, and of it in COMMIT."""
    commit_ms: float
    generator_cpu_us: float
    """The load generator's CPU per commit (this process)."""


async def commit_load(server: Server, writers: int, seconds: float, partitions: int) -> CommitRun:
    """Durable offset commits: each writer commits `partitions` offsets per request (its own
    simple group, generation -1), one request outstanding per connection. Every answer is
    checked: the first of each connection decoded (no error on any partition), the others
    must be the same bytes."""
    conns = [await Conn.open(server.port) for _ in range(writers)]
    frames = [
        encode_request(
            build_request(
                ApiKey.OFFSET_COMMIT,
                8,
                {
                    "group_id": f"commit-{i}",
                    "generation_id_or_member_epoch": -1,
                    "member_id": "",
                    "group_instance_id": None,
                    "topics": [
                        {
                            "name": "orders",
                            "partitions": [
                                {
                                    "partition_index": p,
                                    "committed_offset": 42,
                                    "committed_leader_epoch": -1,
                                    "committed_metadata": "",
                                }
                                for p in range(partitions)
                            ],
                        }
                    ],
                },
            ),
            3,
            "b",
        )
        for i in range(writers)
    ]
    firsts = await asyncio.gather(*(c.raw(f) for c, f in zip(conns, frames, strict=True)))
    for first in firsts:
        response = decode_response(first, 8, 8)[1]
        assert isinstance(response, OffsetCommitResponse)
        codes = [p.error_code for t in response.topics for p in t.partitions]
        if len(codes) != partitions or any(codes):
            raise RuntimeError(f"a commit was refused: {response}")
    counts: list[int] = []
    store = server.store()
    cpu_before = server.cpu()  # (under BENCH_PROFILE, the profile starts here)
    writer_before = server.thread_cpu(store.writer)
    own_before = os.times()
    started = time.perf_counter()
    stop_at = started + seconds

    async def loop(conn: Conn, frame: bytes, expected: bytes) -> None:
        done = 0
        while time.perf_counter() < stop_at:
            if await conn.raw(frame) != expected:
                raise RuntimeError("a commit's answer differs from the first, checked one")
            done += 1
        counts.append(done)

    await asyncio.gather(*(loop(*c) for c in zip(conns, frames, firsts, strict=True)))
    elapsed = time.perf_counter() - started
    own_after = os.times()
    cpu = server.cpu() - cpu_before
    writer_cpu = server.thread_cpu(store.writer) - writer_before
    after = server.store()
    for c in conns:
        c.close()
    commits = sum(counts)
    fsyncs = after.transactions - store.transactions
    return CommitRun(
        commits * partitions / elapsed,
        commits / elapsed,
        fsyncs / elapsed,
        (after.records - store.records) / max(fsyncs, 1),
        cpu * 1e6 / max(commits, 1),
        writer_cpu * 1e6 / max(commits, 1),
        (after.transaction_seconds - store.transaction_seconds) * 1000 / max(fsyncs, 1),
        (after.commit_seconds - store.commit_seconds) * 1000 / max(fsyncs, 1),
        (own_after.user + own_after.system - own_before.user - own_before.system)
        * 1e6
        / max(commits, 1),
    )


@dataclass
class DiskRun:
    fsyncs_per_second: float
    """A plain loop: append 64 bytes to a file, fsync, again."""
    sqlite_per_second: float
    """WAL transactions of `rows` upserts each with synchronous=FULL (one fsync each)."""


def disk_peers(directory: Path, rows: int, seconds: float) -> DiskRun:
    """The disk under the server's store, measured beside it (the server idle meanwhile):
    write+fsync per second in the store's directory, and SQLite transactions per second of
    `rows` upserted offsets each, in the store's layout, one `executemany` per transaction."""
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        fd = os.open(Path(scratch) / "fsync", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            done, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                os.write(fd, b"o" * 64)
                os.fsync(fd)
                done += 1
            fsyncs = done / (time.perf_counter() - started)
        finally:
            os.close(fd)
        db = sqlite3.connect(Path(scratch) / "peer.sqlite", isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute(
                "CREATE TABLE records (kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT "
                "NULL, seq INTEGER NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID"
            )
            db.execute("CREATE INDEX records_by_seq ON records (seq)")
            upsert = (
                "INSERT INTO records (kind, key, value, seq) VALUES (?, ?, ?, ?) ON CONFLICT "
                "(kind, key) DO UPDATE SET value = excluded.value, seq = excluded.seq"
            )
            value = b"o" * 40
            done, seq, started = 0, 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(
                    upsert,
                    [("offset", f"commit-{n % 2000}/orders/{n % 8}", value, n) for n in
                     range(seq, seq + rows)],
                )  # fmt: skip
                db.execute("COMMIT")
                seq += rows
                done += 1
            transactions = done / (time.perf_counter() - started)
        finally:
            db.close()
    return DiskRun(fsyncs, transactions)


async def latency_and_memory(server: Server, members: int, rounds: int) -> Round:
    """Wall and server CPU of a round, bytes of server memory per member (of which bytes per
    connection before the group formed)."""
    before = server.rss()
    conns = [await Conn.open(server.port) for _ in range(members)]
    connected = server.rss(snapshot=False)
    ids, generation, leader = await form_group(conns, f"round-{members}")
    await asyncio.sleep(SETTLE)
    after = server.rss()
    samples, cpu, loop_cpu, gc_cpu = [], [], [], []
    for _ in range(rounds):
        cpu_before, loop_before, gc_before = await asyncio.to_thread(server.cpu_and_loop)
        samples.append(await rebalance_round(conns, f"round-{members}", ids, generation, leader))
        cpu_after, loop_after, gc_after = await asyncio.to_thread(server.cpu_and_loop)
        cpu.append((cpu_after - cpu_before) * 1000)
        loop_cpu.append((loop_after - loop_before) * 1000)
        gc_cpu.append((gc_after - gc_before) * 1000)
        generation += 1
    for c in conns:
        c.close()
    per_member, per_connection = (after - before) / members, (connected - before) / members
    return Round(
        statistics.median(samples),
        statistics.median(cpu),
        min(cpu),
        max(cpu),
        statistics.median(loop_cpu),
        statistics.mean(gc_cpu),
        per_member,
        per_connection,
    )


@dataclass
class Round:
    """Medians over the rounds of one size (ms), and the server's memory per member."""

    wall_ms: float
    cpu_ms: float
    cpu_min_ms: float
    cpu_max_ms: float
    loop_cpu_ms: float
    """CPU of the server's event loop thread alone."""
    gc_ms: float
    """The garbage collector's CPU per round (a mean: a full collection comes now and then)."""
    per_member: float
    per_connection: float


def heartbeat_rows(label: str, ours: Server, echo: Server, args: argparse.Namespace) -> None:
    """Heartbeats one at a time (`--members` connections) and pipelined (`--pipelined`
    connections x `--depth` in flight), each beside the echo server in the same run."""
    shapes = [(args.members, 1), (args.pipelined, args.depth)]
    for connections, depth in shapes:
        hb_runs, echo_runs = [], []
        for run in range(args.runs):
            hb_runs.append(
                asyncio.run(heartbeat_load(ours, connections // 10, 10, args.seconds, depth))
            )
            values = {"group_id": f"hb-{run}", "generation_id": 1, "member_id": "m"}
            frames = [
                encode_request(build_request(ApiKey.HEARTBEAT, 1, values), 7, "b")
            ] * connections
            echo_runs.append(asyncio.run(echo_load(echo, frames, args.seconds, depth)))
        hb = statistics.median(r.per_second for r in hb_runs)
        ech = statistics.median(r.per_second for r in echo_runs)
        hb_cpu = statistics.median(r.cpu_us for r in hb_runs)
        echo_cpu = statistics.median(r.cpu_us for r in echo_runs)
        ratios = statistics.median(
            h.per_second / e.per_second for h, e in zip(hb_runs, echo_runs, strict=True)
        )
        print(
            f"[{label}] heartbeats/s, {connections} connections x {depth} in flight: "
            f"{hb:,.0f}; echo server (asyncio): {ech:,.0f}; ratio {hb / ech:.0%} "
            f"(median of per-run ratios {ratios:.0%}) [goal >= 50%]; server CPU per request "
            f"{hb_cpu:.1f} us vs echo {echo_cpu:.1f} us: echo/ours {echo_cpu / hb_cpu:.0%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--members", type=int, default=200, help="connections for throughput")
    parser.add_argument("--pipelined", type=int, default=50, help="connections, pipelined run")
    parser.add_argument("--depth", type=int, default=8, help="requests in flight, pipelined")
    parser.add_argument(
        "--sizes", type=int, nargs="*", default=[10, 100, 1000, 5000], help="rebalance sizes"
    )
    parser.add_argument("--uvloop", action="store_true", help="also run our server on uvloop")
    parser.add_argument(
        "--commit-connections",
        type=int,
        nargs="*",
        default=None,
        help="connections for the commit rows (default: --members)",
    )
    parser.add_argument(
        "--commit-offsets", type=int, nargs="*", default=[1, 8], help="offsets per OffsetCommit"
    )
    parser.add_argument(
        "--only",
        choices=["heartbeats", "commits", "rebalance", "memory"],
        nargs="*",
        default=None,
        help="memory: per-member memory alone, a fresh server per run (--runs) and size",
    )
    args = parser.parse_args()
    wanted = set(args.only or ["heartbeats", "commits", "rebalance"])
    if wanted == {"memory"}:
        memory_rows(args)
        return
    print(f"# group coordinator over loopback — {machine()}")
    loops = [False, True] if args.uvloop else [False]
    echo = Server("echo")
    try:
        for use_uvloop in loops:
            label = "uvloop" if use_uvloop else "asyncio"
            ours = Server("groups", use_uvloop)
            try:
                time.sleep(1.0)  # let the node settle (event log writer started)
                print(
                    f"[{label}] idle server, all its processes: {ours.all_rss() / 2**20:.0f} MiB "
                    "RSS [goal <= 60 MiB]"
                )
                if "heartbeats" in wanted:
                    heartbeat_rows(label, ours, echo, args)
                if "commits" in wanted:
                    commit_rows(label, ours, args)
                if "rebalance" in wanted:
                    rebalance_rows(label, ours, args)
            finally:
                ours.stop()
    finally:
        echo.stop()
    if "memory" in wanted:  # (fresh servers of its own)
        memory_rows(args)


def commit_rows(label: str, ours: Server, args: argparse.Namespace) -> None:
    """Durable commits beside the disk's own fsync rate, measured in the same runs (each run:
    the commits, then the two disk peers at the batch size the server reached)."""
    directory = Path(ours.store().path).parent
    for per_request in args.commit_offsets:
        for writers in args.commit_connections or [args.members]:
            runs: list[tuple[CommitRun, DiskRun]] = []
            for _ in range(args.runs):
                run = asyncio.run(commit_load(ours, writers, args.seconds, per_request))
                rows = max(1, round(run.offsets_per_fsync))
                runs.append((run, disk_peers(directory, rows, min(args.seconds, 1.0))))
            commits = [r for r, _ in runs]

            def median(values: typing.Iterable[float]) -> float:
                return statistics.median(values)

            fsyncs = median(r.fsyncs_per_second for r in commits)
            sqlite_tx = median(d.sqlite_per_second for _, d in runs)
            transaction_ms = median(r.transaction_ms for r in commits)
            timing = (
                f"({transaction_ms:.1f} ms each, {median(r.commit_ms for r in commits):.1f} ms "
                "of it in COMMIT)"
                if transaction_ms
                else "(store without timings)"
            )
            print(
                f"[{label}] durable offsets/s, {per_request} per OffsetCommit ({writers} "
                f"connections): {median(r.offsets_per_second for r in commits):,.0f} "
                f"[goal >= 25,000 at 8]; commits/s "
                f"{median(r.commits_per_second for r in commits):,.0f}, server CPU per commit "
                f"{median(r.cpu_us for r in commits):.1f} us (SQLite writer thread "
                f"{median(r.writer_cpu_us for r in commits):.1f} us), load generator's "
                f"{median(r.generator_cpu_us for r in commits):.1f} us; server fsyncs/s "
                f"{fsyncs:,.0f} {timing}, "
                f"offsets per fsync {median(r.offsets_per_fsync for r in commits):.1f}; disk "
                f"beside it: write+fsync/s {median(d.fsyncs_per_second for _, d in runs):,.0f}, "
                f"SQLite transactions/s of that many rows {sqlite_tx:,.0f} (server's fsyncs "
                f"{fsyncs / sqlite_tx:.0%} of it)"
            )


def rebalance_rows(label: str, ours: Server, args: argparse.Namespace) -> None:
    figures: dict[int, float] = {}
    for members in args.sizes:
        r = asyncio.run(latency_and_memory(ours, members, args.runs))
        figures[members] = r.wall_ms
        print(
            f"[{label}] rebalance of {members} members, last JoinGroup -> last "
            f"SyncGroup reply: {r.wall_ms:.1f} ms wall, {r.cpu_ms:.1f} ms server CPU "
            f"(min {r.cpu_min_ms:.1f}, max {r.cpu_max_ms:.1f}; event loop thread "
            f"{r.loop_cpu_ms:.1f}, collector {r.gc_ms:.1f} on average) [goal at 1000: "
            f"<= 100 ms, CPU <= 60 ms]; server memory per member: "
            f"{r.per_member / 1024:.1f} KiB [goal <= 4 KiB] (connected, before joining: "
            f"{r.per_connection / 1024:.1f} KiB)"
        )
    if 1000 in figures and 5000 in figures:
        print(
            f"[{label}] growth 1000 -> 5000 members: {figures[5000] / figures[1000]:.1f}x "
            "[goal <= 5.5x]"
        )


async def _form_measured(server: Server, members: int) -> list[dict[str, int]]:
    """Memory breakdowns of the server: before connecting `members`, once connected, as soon
    as their group formed, once settled (`SETTLE` s later), and after a malloc_trim."""
    readings = [server.memory()]
    conns = [await Conn.open(server.port) for _ in range(members)]
    readings.append(server.memory())
    await form_group(conns, f"memory-{members}")
    readings.append(server.memory())
    await asyncio.sleep(SETTLE)
    readings.append(server.memory())
    readings.append(server.memory(trim=True))
    for c in conns:
        c.close()
    return readings


def memory_rows(args: argparse.Namespace) -> None:
    """Server memory per member, each run on a fresh server: RSS growth from before the
    members connect to their group formed, and where it is (see `memory_breakdown`)."""
    print(f"# server memory per member — {machine()}; load {os.getloadavg()[0]:.1f}")
    for members in args.sizes:
        runs = []
        for _ in range(args.runs):
            server = Server("groups")
            try:
                time.sleep(1.0)  # let the node settle (event log writer started)
                runs.append(asyncio.run(_form_measured(server, members)))
            finally:
                server.stop()

        def per_member(
            key: str, reading: int, runs: list[list[dict[str, int]]] = runs, members: int = members
        ) -> str:
            grown = [(r[reading].get(key, 0) - r[0].get(key, 0)) / members for r in runs]
            return f"{statistics.median(grown) / 1024:.2f}"

        print(
            f"{members} members, KiB per member (median of {len(runs)} fresh servers): "
            f"RSS {per_member('rss', 3)} settled [goal <= 4 KB], {per_member('rss', 2)} as "
            f"soon as formed, {per_member('rss', 1)} connected before joining, "
            f"{per_member('rss', 4)} after one more malloc_trim; settled: pymalloc arenas "
            f"{per_member('pymalloc', 3)}, in allocated blocks {per_member('pymalloc_used', 3)}, "
            f"free blocks {per_member('pymalloc_free_blocks', 3)}, free pools "
            f"{per_member('pymalloc_free_pools', 3)}; glibc malloc in use "
            f"{per_member('malloc_used', 3)}, free {per_member('malloc_free', 3)}"
        )
        print("   settled RSS per run: " + ", ".join(
            f"{(r[3]['rss'] - r[0]['rss']) / members / 1024:.2f}" for r in runs
        ))  # fmt: skip
    print(f"# load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
