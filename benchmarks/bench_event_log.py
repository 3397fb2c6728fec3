"""What the event log costs the request path: the same server with its event log on and off.

Heartbeats emit no event; every OffsetCommit emits one (`offset_commit`) and a rebalance several
per member, the largest being `sync_completed` with every member's assignment, which the log's
writer decodes. So the figures are durable commits/s (one offset per OffsetCommit, the most
events per request) and a 1000-member rebalance whose leader hands out real ConsumerProtocol
assignments. Both servers run side by side and are measured in alternation (run by run, round
by round) so that load on this shared machine hits both alike; figures are medians.

Run: .venv/bin/python benchmarks/bench_event_log.py [--runs 5] [--rounds 15] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from assignors.consumer_protocol import Assignment, encode_assignment
from bench_groups import Conn, Server, commit_load, form_group, rebalance_round
from bench_wire import machine

KINDS = {"on": "groups", "off": "groups-no-events"}
PARTITIONS = 3000


def real_assignments(ids: list[str]) -> dict[str, bytes]:
    """Range-like: PARTITIONS partitions of one topic in contiguous runs, one run per member."""
    share = PARTITIONS // len(ids)
    runs = [range(i * share, (i + 1) * share) for i in range(len(ids))]
    return {
        m: encode_assignment(Assignment(tuple(("orders", p) for p in run)))
        for m, run in zip(ids, runs, strict=True)
    }


async def rebalances(servers: dict[str, Server], members: int, rounds: int) -> dict[str, float]:
    """Median ms per server of `rounds` alternated rebalances of `members` members each."""
    groups = {}
    for name, server in servers.items():
        conns = [await Conn.open(server.port) for _ in range(members)]
        ids, generation, leader = await form_group(conns, f"events-{name}")
        groups[name] = (conns, ids, generation, leader, real_assignments(ids))
    samples: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(rounds):
        for name, (conns, ids, generation, leader, handed_out) in groups.items():
            ms = await rebalance_round(conns, f"events-{name}", ids, generation, leader, handed_out)
            samples[name].append(ms)
            groups[name] = (conns, ids, generation + 1, leader, handed_out)
    for conns, *_ in groups.values():
        for c in conns:
            c.close()
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--members", type=int, default=200, help="connections for commits")
    parser.add_argument("--rebalance-members", type=int, default=1000)
    args = parser.parse_args()
    print(f"# event log on vs off — {machine()}")
    servers = {name: Server(kind) for name, kind in KINDS.items()}
    commits: dict[str, list[float]] = {name: [] for name in KINDS}
    cpu_us: dict[str, list[float]] = {name: [] for name in KINDS}  # server CPU per commit
    writer_us: list[float] = []  # the writer process's CPU per commit (log on)
    try:
        for _ in range(args.runs):
            for name, server in servers.items():
                cpu, writer = server.cpu(), server.writer_cpu()
                run = asyncio.run(commit_load(server, args.members, args.seconds, 1))
                rate = run.commits_per_second
                done = rate * args.seconds
                commits[name].append(rate)
                cpu_us[name].append((server.cpu() - cpu) / done * 1e6)
                if name == "on":
                    writer_us.append((server.writer_cpu() - writer) / done * 1e6)
        ms = asyncio.run(rebalances(servers, args.rebalance_members, args.rounds))
    finally:
        for server in servers.values():
            server.stop()
    on, off = statistics.median(commits["on"]), statistics.median(commits["off"])
    print(f"durable commits/s (1 offset each, {args.members} connections): log on {on:,.0f}, "
          f"off {off:,.0f}; on/off {on / off:.2f}")  # fmt: skip
    cpu_on, cpu_off = statistics.median(cpu_us["on"]), statistics.median(cpu_us["off"])
    print(f"server CPU per commit: log on {cpu_on:.0f} us, off {cpu_off:.0f} us; on/off "
          f"{cpu_on / cpu_off:.2f}; the writer process: {statistics.median(writer_us):.1f} us "
          f"per commit (on the other core)")  # fmt: skip
    ratio = ms["on"] / ms["off"]
    print(f"rebalance of {args.rebalance_members} members ({PARTITIONS} partitions assigned), "
          f"last JoinGroup -> last SyncGroup reply, median of {args.rounds}: log on "
          f"{ms['on']:.1f} ms, off {ms['off']:.1f} ms; on/off {ratio:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
