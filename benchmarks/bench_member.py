"""The member side against our server: what one join costs the members already in the group,
and how many heartbeats one process drives.

1. *Join into a group of N* (default 100 members, 200 partitions): the group is stable, one more
   member joins; until every partition is held exactly once again, how long were the N members
   without any partition (member-seconds), how many of them were, how long were partitions held
   by nobody (partition-seconds), and how long the whole change took. Three protocols, measured
   in the same run against the same server: eager (aiokafka 0.14, the peer: every member revokes
   everything and waits for the whole group), classic cooperative (`GroupMember`,
   cooperative-sticky: only what moves is revoked, one extra rebalance) and the consumer
   protocol (`GroupMember(group_protocol="consumer")`, KIP-848: per-member reconciliation).
   Every member runs in this one event loop; ownership is read from the callbacks' times.
2. *Heartbeats per second*: M classic `GroupMember`s in this one event loop, heartbeat interval
   H; the heartbeats actually sent per second against the target M*1000/H, the event loop's
   lag, and whether every member kept its membership.

The server is `rebalance serve` in its own process (so the member process's figures are its own).
Heartbeat interval 500 ms and session 10 s for every protocol (KIP-848: the server's
group.consumer.* settings). Run: `.venv/bin/python benchmarks/bench_member.py [--members N]
[--partitions P] [--repeat R] [--heartbeat-members M ...]`. Figures are medians over the repeats;
the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator.clients.member import GroupMember

TOPIC = "bench"
HEARTBEAT_MS = 500
SESSION_MS = 10_000


@contextlib.asynccontextmanager
async def server(partitions: int) -> AsyncIterator[str]:
    with tempfile.TemporaryDirectory(prefix="bench-member-") as data_dir:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "coordinator.cli.main", "serve", "--bind", "127.0.0.1:0",
            "--data-dir", data_dir, "--topic", f"{TOPIC}:{partitions}",
            "--set", "group.initial.rebalance.delay.ms=1000",
            "--set", "group.min.session.timeout.ms=1000",
            "--set", "group.consumer.min.session.timeout.ms=1000",
            "--set", f"group.consumer.session.timeout.ms={SESSION_MS}",
            "--set", "group.consumer.min.heartbeat.interval.ms=100",
            "--set", f"group.consumer.heartbeat.interval.ms={HEARTBEAT_MS}",
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        drain: asyncio.Task[bytes] | None = None
        try:
            assert process.stderr is not None
            while True:
                line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
                assert line, "server exited"
                if found := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
                    break
            drain = asyncio.create_task(process.stderr.read())
            yield f"127.0.0.1:{found.group(1)}"
        finally:
            process.terminate()
            await process.wait()
            if drain is not None:
                drain.cancel()


@dataclass
class Timeline:
    """Per member: (time, partitions held from then on)."""

    holdings: dict[str, list[tuple[float, frozenset[tuple[str, int]]]]] = field(
        default_factory=dict
    )

    def change(self, name: str, added: frozenset[Any], removed: frozenset[Any]) -> None:
        history = self.holdings.setdefault(name, [(time.monotonic(), frozenset())])
        current = history[-1][1]
        history.append((time.monotonic(), (current | added) - removed))

    def now(self, name: str) -> frozenset[tuple[str, int]]:
        history = self.holdings.get(name)
        return history[-1][1] if history else frozenset()

    def empty_seconds(self, name: str, start: float, end: float) -> float:
        """Seconds within [start, end] during which `name` held nothing."""
        total = 0.0
        history = self.holdings.get(name, [])
        for (t, held), (t_next, _) in zip(history, [*history[1:], (end, frozenset())], strict=True):
            lo, hi = max(t, start), min(t_next, end)
            if hi > lo and not held:
                total += hi - lo
        return total

    def unowned_partition_seconds(self, partitions: int, start: float, end: float) -> float:
        events = sorted(
            (t, name, held) for name, history in self.holdings.items() for t, held in history
        )
        held_by: dict[str, frozenset[Any]] = {}
        total, last = 0.0, start
        for t, name, held in [*events, (end, "", frozenset())]:
            if t > start:
                owned = frozenset().union(*held_by.values()) if held_by else frozenset()
                total += (min(t, end) - max(last, start)) * (partitions - len(owned))
                last = t
            if t >= end:
                break
            if name:
                held_by[name] = held
        return total


def exact(timeline: Timeline, names: list[str], partitions: int) -> bool:
    held = [timeline.now(n) for n in names]
    return sum(len(h) for h in held) == partitions and all(held)


async def until(condition: Callable[[], bool], timeout: float) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("the group did not settle")
        await asyncio.sleep(0.02)


def group_member(bootstrap: str, group: str, name: str, timeline: Timeline, protocol: str) -> Any:
    async def assigned(p: frozenset[Any]) -> None:
        timeline.change(name, p, frozenset())

    async def gone(p: frozenset[Any]) -> None:
        timeline.change(name, frozenset(), p)

    return GroupMember(
        bootstrap, group, [TOPIC], group_protocol=protocol, session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=None if protocol == "consumer" else HEARTBEAT_MS,
        rebalance_timeout_ms=60_000, client_id=name,
        on_assigned=assigned, on_revoked=gone, on_lost=gone,
    )  # fmt: skip


class AiokafkaMember:
    """An unmodified aiokafka consumer (eager protocol), with a task polling it."""

    def __init__(self, bootstrap: str, group: str, name: str, timeline: Timeline) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name,
            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
            max_poll_interval_ms=60_000, enable_auto_commit=False,
        )  # fmt: skip

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                timeline.change(
                    name, frozenset(), frozenset((t.topic, t.partition) for t in revoked)
                )

            async def on_partitions_assigned(self, assigned: Any) -> None:
                timeline.change(
                    name, frozenset((t.topic, t.partition) for t in assigned), frozenset()
                )

        self.consumer.subscribe([TOPIC], listener=Listener())
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        async def run() -> None:
            await self.consumer.start()
            while True:
                await self.consumer.getmany(timeout_ms=200)

        self.task = asyncio.create_task(run())

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        await self.consumer.stop()


async def one_join(protocol: str, members: int, partitions: int, run: int) -> dict[str, float]:
    timeline = Timeline()
    group = f"join-{protocol}-{run}"
    names = [f"m{i:03d}" for i in range(members)]
    async with server(partitions) as bootstrap:

        def make(name: str) -> Any:
            if protocol == "eager":
                return AiokafkaMember(bootstrap, group, name, timeline)
            return group_member(bootstrap, group, name, timeline, protocol)

        running = [make(n) for n in names]
        for member in running:
            member.start()
        try:
            await until(lambda: exact(timeline, names, partitions), 180)
            await asyncio.sleep(2 * HEARTBEAT_MS / 1000)  # settled: a few quiet heartbeats
            start = time.monotonic()
            newcomer = make("new")
            running.append(newcomer)
            newcomer.start()
            await until(lambda: exact(timeline, [*names, "new"], partitions), 180)
            end = time.monotonic()
        finally:
            await asyncio.gather(*(m.close() for m in running), return_exceptions=True)
    empty = [timeline.empty_seconds(n, start, end) for n in names]
    return {
        "member_seconds_without": sum(empty),
        "members_without": sum(1 for e in empty if e > 0),
        "partition_seconds_unowned": timeline.unowned_partition_seconds(partitions, start, end),
        "duration_s": end - start,
    }


async def heartbeats(count: int, interval_ms: int, seconds: float) -> dict[str, float]:
    timeline = Timeline()
    async with server(count) as bootstrap:
        members = [
            GroupMember(
                bootstrap,
                f"hb-{count}",
                [TOPIC],
                session_timeout_ms=SESSION_MS,
                heartbeat_interval_ms=interval_ms,
                client_id=f"h{i}",
            )
            for i in range(count)
        ]
        for m in members:
            m.start()
        try:
            await until(lambda: all(m.member.settled for m in members), 300)
            await asyncio.sleep(1)
            before = sum(m.sent["Heartbeat"] for m in members)
            joins_before = sum(m.sent["JoinGroup"] for m in members)
            cpu, t0 = time.process_time(), time.monotonic()
            lags: list[float] = []
            while time.monotonic() - t0 < seconds:
                tick = time.monotonic()
                await asyncio.sleep(0.05)
                lags.append(time.monotonic() - tick - 0.05)
            elapsed = time.monotonic() - t0
            cpu = time.process_time() - cpu
            sent = sum(m.sent["Heartbeat"] for m in members) - before
            rejoins = sum(m.sent["JoinGroup"] for m in members) - joins_before
        finally:
            await asyncio.gather(*(m.close(5) for m in members), return_exceptions=True)
    del timeline
    return {
        "per_s": sent / elapsed,
        "target_per_s": count * 1000 / interval_ms,
        "cpu_share": cpu / elapsed,
        "lag_p50_ms": statistics.median(lags) * 1000,
        "lag_max_ms": max(lags) * 1000,
        "rejoins": rejoins,
    }


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


async def main(args: argparse.Namespace) -> None:
    print(f"# bench_member: python {platform.python_version()}, {platform.machine()}")
    print(f"join into {args.members} members, {args.partitions} partitions, "
          f"heartbeat {HEARTBEAT_MS} ms, medians of {args.repeat}")  # fmt: skip
    results: dict[str, list[dict[str, float]]] = {}
    for run in range(args.repeat):
        for protocol in ("eager", "classic", "consumer"):  # alternated: noise hits all alike
            results.setdefault(protocol, []).append(
                await one_join(protocol, args.members, args.partitions, run)
            )
    label = {"eager": "eager (aiokafka)", "classic": "cooperative (GroupMember)",
             "consumer": "consumer protocol (GroupMember)"}  # fmt: skip
    peer = median(results["eager"], "member_seconds_without")
    print(f"{'protocol':34} {'member-s without':>17} {'members without':>16} "
          f"{'partition-s unowned':>20} {'duration s':>11}  vs eager")  # fmt: skip
    for protocol, runs in results.items():
        without = median(runs, "member_seconds_without")
        ratio = "" if protocol == "eager" else (f"{without / peer:.3f}x" if peer else "-")
        print(f"{label[protocol]:34} {without:17.2f} {median(runs, 'members_without'):16.0f} "
              f"{median(runs, 'partition_seconds_unowned'):20.2f} "
              f"{median(runs, 'duration_s'):11.2f}  {ratio}")  # fmt: skip
    print()
    header = ("members", "interval ms", "heartbeats/s", "target/s", "ratio", "cpu",
              "lag p50 ms", "lag max ms", "rejoins")  # fmt: skip
    widths = (8, 12, 13, 9, 6, 5, 11, 11, 8)
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    for count in args.heartbeat_members:
        runs = [await heartbeats(count, args.interval_ms, args.seconds) for _ in range(args.repeat)]
        per_s, target = median(runs, "per_s"), median(runs, "target_per_s")
        print(f"{count:8d} {args.interval_ms:12d} {per_s:13.0f} {target:9.0f} "
              f"{per_s / target:6.2f} {median(runs, 'cpu_share'):5.2f} "
              f"{median(runs, 'lag_p50_ms'):11.1f} {median(runs, 'lag_max_ms'):11.1f} "
              f"{median(runs, 'rejoins'):8.0f}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--heartbeat-members", type=int, nargs="*", default=[250, 1000])
    parser.add_argument("--interval-ms", type=int, default=250)
    parser.add_argument("--seconds", type=float, default=10.0)
    asyncio.run(main(parser.parse_args()))
