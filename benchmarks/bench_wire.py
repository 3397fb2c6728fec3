"""Wire server and record store throughput.

1. Requests/s over loopback: a bare length-prefixed echo server (the floor any asyncio server
   pays for framing and socket I/O) against our server answering ApiVersions v3 (frame split,
   prefix, kio decode, registry dispatch, response build, kio encode, in-order write). Each
   server runs in its own process; the load generator runs in this process with many
   connections, one request outstanding per connection. With uvloop installed, our server is
   also measured on uvloop.
2. Durable store appends/s: `SqliteStore.append` of one offset-like record from many
   concurrent writers; group commit shows as appends per transaction (one fsync each).

Run: .venv/bin/python benchmarks/bench_wire.py [--seconds 3] [--runs 5] [--connections 64]
uvloop is not a project dependency; to include it, install it into the venv first:
    .tools/bin/uv pip install --python .venv/bin/python uvloop
Numbers are medians over runs; record them in benchmarks/RESULTS.md under "## Server". On a
shared, noisy machine the server's CPU time per request (read from /proc) is steadier than
requests/s, and with two cores the Python load generator caps the echo server's figure.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import statistics
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from coordinator.groups.store import SqliteStore, StoredRecord
from coordinator.testing.server import running_server
from coordinator.wire.codec import build_request, encode_request

LENGTH = struct.Struct(">i")


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readexactly(4)
            body = await reader.readexactly(LENGTH.unpack(head)[0])
            writer.write(head + body)
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def _serve(kind: str, ready: Connection) -> None:
    if kind == "echo":
        server = await asyncio.start_server(_echo, "127.0.0.1", 0)
        ready.send(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()
    async with running_server() as node:
        ready.send(node.port)
        await asyncio.Event().wait()


def _server_process(kind: str, use_uvloop: bool, ready: Connection) -> None:
    if use_uvloop:
        import uvloop

        uvloop.run(_serve(kind, ready))
    else:
        asyncio.run(_serve(kind, ready))


async def _client(port: int, request: bytes, stop_at: float, counts: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    done = 0
    while time.perf_counter() < stop_at:
        writer.write(request)
        head = await reader.readexactly(4)
        await reader.readexactly(LENGTH.unpack(head)[0])
        done += 1
    counts.append(done)
    writer.close()


async def _load(port: int, connections: int, seconds: float) -> float:
    request = encode_request(build_request(18, 3, {}), 1, "bench")
    counts: list[int] = []
    started = time.perf_counter()
    stop_at = started + seconds
    await asyncio.gather(*(_client(port, request, stop_at, counts) for _ in range(connections)))
    return sum(counts) / (time.perf_counter() - started)


def start_server(kind: str, use_uvloop: bool) -> tuple[multiprocessing.process.BaseProcess, int]:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_server_process, args=(kind, use_uvloop, child), daemon=True)
    process.start()
    return process, int(parent.recv())


def run_load(port: int, connections: int, seconds: float) -> float:
    """The load generator uses uvloop when it is installed, so it is less of a bottleneck."""
    try:
        import uvloop

        rate: float = uvloop.run(_load(port, connections, seconds))
        return rate
    except ImportError:
        return asyncio.run(_load(port, connections, seconds))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), robust to a noisy shared machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class ServerRun:
    requests_per_second: float
    cpu_us_per_request: float


def measure_servers(
    configs: list[tuple[str, bool]], args: argparse.Namespace
) -> dict[tuple[str, bool], list[ServerRun]]:
    """Runs are interleaved across servers so machine noise hits every server alike."""
    started = {config: start_server(*config) for config in configs}
    try:
        results: dict[tuple[str, bool], list[ServerRun]] = {config: [] for config in configs}
        for _process, port in started.values():
            run_load(port, args.connections, 0.5)  # warm-up
        for _ in range(args.runs):
            for config, (process, port) in started.items():
                assert process.pid is not None
                cpu_before = cpu_seconds(process.pid)
                rate = run_load(port, args.connections, args.seconds)
                cpu = cpu_seconds(process.pid) - cpu_before
                results[config].append(ServerRun(rate, cpu * 1e6 / (rate * args.seconds)))
        return results
    finally:
        for process, _port in started.values():
            process.kill()
            process.join()


async def _store_run(writers: int, seconds: float) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as scratch:
        store = SqliteStore(Path(scratch) / "groups.sqlite")
        stop_at = time.perf_counter() + seconds

        async def writer(index: int) -> None:
            partition = 0
            while time.perf_counter() < stop_at:
                key = f"group-{index}/topic/{partition % 50}"
                await store.append([StoredRecord("offset", key, b"o" * 24)])
                partition += 1

        started = time.perf_counter()
        await asyncio.gather(*(writer(i) for i in range(writers)))
        elapsed = time.perf_counter() - started
        stats = store.stats
        store.close()
    return stats.appends / elapsed, stats.appends / max(stats.transactions, 1)


def machine() -> str:
    model = "unknown"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next(
            line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line
        )
    except (OSError, subprocess.CalledProcessError, StopIteration):
        pass
    return f"{model}, {multiprocessing.cpu_count()} cores, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--writers", type=int, nargs="*", default=[1, 16, 128, 512])
    parser.add_argument("--store-only", action="store_true", help="only the SqliteStore part")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.store_only:
        store_rows(args)
        return
    print(f"{args.connections} connections, {args.runs} runs x {args.seconds}s, medians\n")

    try:
        import uvloop  # noqa: F401

        has_uvloop = True
    except ImportError:
        has_uvloop = False
    configs = [("echo", False), ("kafka", False)]
    if has_uvloop:
        configs += [("echo", True), ("kafka", True)]
    medians: dict[tuple[str, bool], float] = {}
    cpu: dict[tuple[str, bool], float] = {}
    for (kind, use_uvloop), runs in measure_servers(configs, args).items():
        label = f"{kind}{' (uvloop)' if use_uvloop else ''}"
        rates = [run.requests_per_second for run in runs]
        medians[(kind, use_uvloop)] = statistics.median(rates)
        cpu[(kind, use_uvloop)] = statistics.median(run.cpu_us_per_request for run in runs)
        print(
            f"{label:<16} {medians[(kind, use_uvloop)]:>10,.0f} req/s "
            f"(min {min(rates):,.0f} max {max(rates):,.0f})  "
            f"server CPU {cpu[(kind, use_uvloop)]:6.1f} us/request"
        )
    ratio = medians[("kafka", False)] / medians[("echo", False)]
    cpu_ratio = cpu[("kafka", False)] / cpu[("echo", False)]
    print(f"ApiVersions server / echo server (asyncio): {ratio:.2f} of the req/s")
    print(f"server CPU per request, ApiVersions / echo: {cpu_ratio:.1f}x")
    if has_uvloop:
        speedup = medians[("kafka", True)] / medians[("kafka", False)]
        cpu_gain = cpu[("kafka", False)] / cpu[("kafka", True)]
        print(f"uvloop, our server: {speedup:.2f}x req/s, {cpu_gain:.2f}x less CPU per request")
    else:
        print("uvloop not installed: skipped")

    store_rows(args)


def store_rows(args: argparse.Namespace) -> None:
    print("\nSqliteStore.append, one offset record per append, concurrent writers (medians)")
    for writers in args.writers:
        results = [asyncio.run(_store_run(writers, args.seconds)) for _ in range(args.runs)]
        rate = statistics.median(r[0] for r in results)
        per_tx = statistics.median(r[1] for r in results)
        print(f"{writers:>5} writers {rate:>10,.0f} appends/s  {per_tx:>7.1f} appends per fsync")


if __name__ == "__main__":
    main()
