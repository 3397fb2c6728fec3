"""TLS against plaintext on the same server, same run: connection setup and heartbeat throughput.

One server process with a PLAINTEXT and an SSL listener (certificates made for the run by
`coordinator.testing.certificates`; EC P-256 server key, TLSv1.3 unless `--tls12`). The load
generator runs in this process.

1. Connection setup: open a connection, send ApiVersions v3, read the answer, close; one at a
   time, `--connections` of them per run. Wall time per connection (client side) and server CPU
   per connection (from /proc). TLS adds the handshake: the key exchange, the server's
   signature and, on the client, the certificate check.
2. Heartbeats: `--members` members, each in a group of its own on its own connection (formed
   with JoinGroup/SyncGroup first), send Heartbeat v1 one at a time for `--seconds`;
   heartbeats/s and server CPU per heartbeat. TLS adds record encryption both ways.

Runs alternate plaintext and TLS so machine noise hits both alike; medians are printed with the
ratio TLS / plaintext. Record the figures in benchmarks/RESULTS.md under "## Server".

Run: .venv/bin/python benchmarks/bench_tls.py [--runs 5] [--connections 300] [--members 64]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import ssl
import statistics
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench_wire import machine
from coordinator.testing.certificates import make_pki
from coordinator.testing.server import running_server
from coordinator.wire.client import WireClient

SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x00"


async def _serve(keystore: str, protocols: str, ready: Connection) -> None:
    settings = [
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        f"ssl.keystore.location={keystore}",
        f"ssl.enabled.protocols={protocols}",
        "group.initial.rebalance.delay.ms=0",
    ]
    async with running_server(settings=settings) as node:
        ready.send({s.name: s.bound[1] for s in node.app.listeners})
        await asyncio.Event().wait()


def _server_process(keystore: str, protocols: str, ready: Connection) -> None:
    asyncio.run(_serve(keystore, protocols, ready))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def connection_setup(port: int, tls: ssl.SSLContext | None, count: int) -> float:
    """Median ms to connect, get an ApiVersions answer and close, one connection at a time."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        client = await WireClient.connect("127.0.0.1", port, "bench", tls=tls)
        await client.request(18, 3, {})
        await client.close()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def heartbeats(port: int, tls: ssl.SSLContext | None, members: int, seconds: float) -> float:
    """Heartbeats/s from `members` members, one group and connection each, one in flight."""
    clients = [
        await WireClient.connect("127.0.0.1", port, "bench", tls=tls) for _ in range(members)
    ]
    frames = []
    for index, client in enumerate(clients):
        group = f"tls-bench-{port}-{index}-{time.monotonic_ns()}"
        join: dict[str, Any] = {
            "group_id": group, "session_timeout": 30_000, "rebalance_timeout": 30_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
        }  # fmt: skip
        joined = await client.request(11, 3, join)
        await client.request(14, 3, {
            "group_id": group, "generation_id": joined.generation_id,
            "member_id": joined.member_id, "group_instance_id": None,
            "assignments": [{"member_id": joined.member_id, "assignment": b"a" * 24}],
        })  # fmt: skip
        heartbeat = {"group_id": group, "generation_id": joined.generation_id,
                     "member_id": joined.member_id}  # fmt: skip
        frames.append(client.encode(12, 1, heartbeat))
    counts: list[int] = []
    started = time.perf_counter()
    stop_at = started + seconds

    async def member(client: WireClient, frame: bytes) -> None:
        done = 0
        while time.perf_counter() < stop_at:
            await client.send(frame)
            await client.read_frame()
            done += 1
        counts.append(done)

    await asyncio.gather(*(member(c, f) for c, f in zip(clients, frames, strict=True)))
    rate = sum(counts) / (time.perf_counter() - started)
    for client in clients:
        await client.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--tls12", action="store_true", help="TLSv1.2 instead of TLSv1.3")
    args = parser.parse_args()
    protocols = "TLSv1.2" if args.tls12 else "TLSv1.3"
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}")
    print(f"{protocols}, {args.runs} alternated runs, medians\n")
    with tempfile.TemporaryDirectory() as scratch:
        pki = make_pki(Path(scratch))
        client_tls = ssl.create_default_context(cafile=str(pki.ca))
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        server = context.Process(
            target=_server_process, args=(str(pki.server_keystore), protocols, child), daemon=True
        )
        server.start()
        try:
            ports = parent.recv()
            assert server.pid is not None
            run_all(server.pid, ports, client_tls, args)
        finally:
            server.kill()
            server.join()


def run_all(pid: int, ports: dict[str, int], client_tls: ssl.SSLContext, args: Any) -> None:
    kinds = {"plaintext": (ports["PLAINTEXT"], None), "TLS": (ports["SSL"], client_tls)}
    setup: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    beats: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    for port, tls in kinds.values():  # warm-up
        asyncio.run(connection_setup(port, tls, 20))
    for _ in range(args.runs):
        for kind, (port, tls) in kinds.items():
            before = cpu_seconds(pid)
            ms = asyncio.run(connection_setup(port, tls, args.connections))
            cpu_ms = (cpu_seconds(pid) - before) * 1000 / args.connections
            setup[kind].append((ms, cpu_ms))
        for kind, (port, tls) in kinds.items():
            before = cpu_seconds(pid)
            rate = asyncio.run(heartbeats(port, tls, args.members, args.seconds))
            cpu_us = (cpu_seconds(pid) - before) * 1e6 / (rate * args.seconds)
            beats[kind].append((rate, cpu_us))

    def median(rows: list[tuple[float, float]], index: int) -> float:
        return statistics.median(row[index] for row in rows)

    plain_ms, tls_ms = median(setup["plaintext"], 0), median(setup["TLS"], 0)
    plain_cpu, tls_cpu = median(setup["plaintext"], 1), median(setup["TLS"], 1)
    print(f"connection setup (connect + ApiVersions + close), {args.connections} per run:")
    print(f"  plaintext {plain_ms:.2f} ms wall, {plain_cpu:.2f} ms server CPU")
    print(f"  TLS       {tls_ms:.2f} ms wall, {tls_cpu:.2f} ms server CPU")
    print(
        f"  TLS / plaintext: {tls_ms / plain_ms:.1f}x wall, {tls_cpu / plain_cpu:.1f}x server "
        f"CPU (handshake ~{tls_ms - plain_ms:.2f} ms wall, {tls_cpu - plain_cpu:.2f} ms CPU)"
    )
    plain_rate, tls_rate = median(beats["plaintext"], 0), median(beats["TLS"], 0)
    plain_us, tls_us = median(beats["plaintext"], 1), median(beats["TLS"], 1)
    print(f"heartbeats, {args.members} members x 1 in flight, {args.seconds} s per run:")
    print(f"  plaintext {plain_rate:,.0f}/s, {plain_us:.1f} us server CPU per heartbeat")
    print(f"  TLS       {tls_rate:,.0f}/s, {tls_us:.1f} us server CPU per heartbeat")
    print(f"  TLS / plaintext: {tls_rate / plain_rate:.2f}x throughput, {tls_us / plain_us:.2f}x "
          "server CPU per heartbeat")  # fmt: skip


if __name__ == "__main__":
    main()
