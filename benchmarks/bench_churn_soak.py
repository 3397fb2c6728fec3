"""Server memory under membership churn: `rebalance serve` (a real process, SQLite store) hosts
200 classic members in 20 groups for an hour; every member heartbeats and commits once a
second, and each group swaps one member for a new one every ~18 s (a leave, a join with a new
member id, everybody rejoins: a new generation). The server's `VmRSS` (and its event log
writer's, if any) is read every minute; the figure of merit is the growth from minute 10 to the
end (goal: within 5%, or bounded by what the docs say must grow).

Run: .venv/bin/python benchmarks/bench_churn_soak.py [--minutes 60] [--groups 20] [--members 10]
Figures go to benchmarks/RESULTS.md under "## Churn soak" (with the machine's load).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_groups import join_values  # the same classic JoinGroup as the group benchmark
from coordinator.testing.server import WireClient

PARTITIONS = 20
CHURN_SECONDS = 18.0


class Counters:
    def __init__(self) -> None:
        self.generations = 0
        self.commits = 0
        self.errors: dict[tuple[str, int], int] = {}

    def error(self, api: str, code: int) -> None:
        self.errors[api, code] = self.errors.get((api, code), 0) + 1


class Member:
    def __init__(self, client: WireClient, group: str) -> None:
        self.client = client
        self.group = group
        self.member_id = ""
        self.generation = -1
        self.offset = 0

    async def join(self) -> Any:
        reply = await self.client.request(11, 3, join_values(self.group, self.member_id))
        if reply.error_code:
            raise RuntimeError(
                f"{self.group}: JoinGroup of {self.member_id!r} answered {reply.error_code}"
            )
        self.member_id, self.generation = reply.member_id, reply.generation_id
        return reply

    async def sync(self, leader: str, ids: list[str]) -> None:
        assignments = (
            [{"member_id": m, "assignment": b"a" * 24} for m in ids]
            if self.member_id == leader
            else []
        )
        await self.client.request(14, 3, {
            "group_id": self.group, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": None, "assignments": assignments,
        })  # fmt: skip

    async def beat_and_commit(self, partition: int, counters: Counters) -> None:
        beat = await self.client.request(12, 3, {
            "group_id": self.group, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": None,
        })  # fmt: skip
        if beat.error_code:
            counters.error("heartbeat", beat.error_code)
        self.offset += 1
        committed = await self.client.request(8, 8, {
            "group_id": self.group, "generation_id_or_member_epoch": self.generation,
            "member_id": self.member_id, "group_instance_id": None,
            "topics": [{"name": "orders", "partitions": [{
                "partition_index": partition, "committed_offset": self.offset,
                "committed_leader_epoch": -1, "committed_metadata": ""}]}],
        })  # fmt: skip
        code = committed.topics[0].partitions[0].error_code
        if code:
            counters.error("commit", code)
        else:
            counters.commits += 1

    async def leave(self) -> None:
        await self.client.request(13, 3, {
            "group_id": self.group, "members": [
                {"member_id": self.member_id, "group_instance_id": None}],
        })  # fmt: skip
        await self.client.close()


async def rebalance(members: list[Member], counters: Counters, probe: WireClient) -> None:
    """Everybody (re)joins and syncs one generation. A newcomer (no member id yet) joins first
    and the others only once the group lists it (DescribeGroups), so no generation completes
    without it."""
    newcomers = [asyncio.ensure_future(m.join()) for m in members if not m.member_id]
    known = [m for m in members if m.member_id]
    if newcomers and known:
        group = members[0].group
        while True:
            described = await probe.request(15, 3, {
                "groups": [group], "include_authorized_operations": False})  # fmt: skip
            if len(described.groups[0].members) == len(members):
                break
            await asyncio.sleep(0.05)
    replies = await asyncio.gather(*newcomers, *(m.join() for m in known))
    if len({m.generation for m in members}) != 1:
        raise RuntimeError(f"members disagree on the generation: {[m.generation for m in members]}")
    ids = [m.member_id for m in members]
    await asyncio.gather(*(m.sync(replies[0].leader, ids) for m in members))
    counters.generations += 1


async def churn_group(
    port: int, group: str, size: int, deadline: float, counters: Counters, rng: random.Random
) -> None:
    members = [Member(await WireClient.connect("127.0.0.1", port), group) for _ in range(size)]
    probe = await WireClient.connect("127.0.0.1", port)
    await rebalance(members, counters, probe)
    next_churn = time.monotonic() + rng.uniform(0, CHURN_SECONDS)
    while time.monotonic() < deadline:
        started = time.monotonic()
        if started >= next_churn:
            leaving = members.pop(rng.randrange(len(members)))
            await leaving.leave()
            members.append(Member(await WireClient.connect("127.0.0.1", port), group))
            await rebalance(members, counters, probe)
            next_churn = started + CHURN_SECONDS
        await asyncio.gather(
            *(m.beat_and_commit(i % PARTITIONS, counters) for i, m in enumerate(members))
        )
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    for member in members:
        with contextlib.suppress(Exception):
            await member.leave()


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(found.group(1)) if found else 0


def child_pids(pid: int) -> list[int]:
    found: list[int] = []
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(child) for child in listing.read_text().split()]
    return found


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="churn-soak-") as data_dir:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "coordinator.cli.main", "serve", "--bind", "127.0.0.1:0",
            "--data-dir", data_dir, "--topic", f"orders:{PARTITIONS}",
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stderr is not None
        while True:
            line = (await process.stderr.readline()).decode()
            if not line:
                raise SystemExit("server exited before listening")
            if found := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
                port = int(found.group(1))
                break
        drain = asyncio.create_task(process.stderr.read())
        counters = Counters()
        deadline = time.monotonic() + args.minutes * 60
        rng = random.Random(35)
        groups = [
            asyncio.create_task(
                churn_group(port, f"soak-{g}", args.members, deadline, counters, rng)
            )
            for g in range(args.groups)
        ]
        started = time.monotonic()
        print(f"load {os.getloadavg()[0]:.1f}; minute, server RSS KiB, writer RSS KiB, "
              "generations, commits", flush=True)  # fmt: skip
        samples: list[int] = []
        try:
            for minute in range(1, args.minutes + 1):
                await asyncio.sleep(max(0.0, started + minute * 60 - time.monotonic()))
                failed = [g for g in groups if g.done() and g.exception() is not None]
                if failed:
                    raise failed[0].exception()  # type: ignore[misc]
                assert process.pid is not None
                server = rss_kib(process.pid)
                writer = sum(rss_kib(child) for child in child_pids(process.pid))
                samples.append(server)
                print(f"{minute} {server} {writer} {counters.generations} {counters.commits} "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
            await asyncio.gather(*groups)
        finally:
            process.kill()
            await process.wait()
            drain.cancel()
        print(f"errors by code: {counters.errors}")
        if len(samples) >= 10:
            tenth, last = samples[9], samples[-1]
            growth = 100 * (last - tenth) / tenth
            print(f"RSS minute 1 {samples[0]} KiB, minute 10 {tenth} KiB, minute "
                  f"{len(samples)} {last} KiB: {growth:+.1f}% after minute 10; "
                  f"{counters.generations} generations, {counters.commits} commits")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--members", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
