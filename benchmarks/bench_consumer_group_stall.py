"""Does one big KIP-848 group stall the coordinator? Heartbeat latency of 1,000 members in 100
small consumer groups while the target assignment of a 10,000-member group over 100 topics x
10,000 partitions (1M, `uniform`) is computed after one of its members leaves.

Three runs on the same node, each from scratch: the assignor on the coordinator's loop
(`group.consumer.assignor.offload.enable=false`, peer), in one assignor thread (peer), and in
the assignor worker process (the default, `coordinator.groups.assignor_worker`). The node is the
real `GroupRuntime` (its loop, timers and write path) over an in-memory store, in this process. The
big group is not formed by 10,000 joins (more than 16 minutes under load, most of it
reconciling members one heartbeat at a time): its records (each member's subscription, target
and current assignment, stable at the target epoch, the target being what `uniform` gives) are
written to the store before the node starts, and the node loads them as it loads any partition
at start-up. The small groups' members are tasks on the same loop, each heartbeating every
`--period-ms` at fixed times. A heartbeat's latency is measured from when it was due to when
its reply was ready, so time the loop spent blocked counts even if the heartbeat could not be
sent meanwhile.

Once loaded, the runtime primes the worker process with the big group (sends it whole, paced,
and names its targets); "priming" is the heartbeats due meanwhile (from the small members' first
due heartbeat; their joins come before). Then two members leave the big group in turn, 1.5 s
apart (past the assignment interval), each followed by a heartbeat of a remaining member (which
computes the target: a departure only bumps the group epoch, as in Kafka): the first leave is
the first computation after the load (with priming, the worker is sent only what changed, as for
the second, an ordinary epoch).
Figures are over the heartbeats due between a leave and the moment its target was applied
(plus 200 ms); medians over `--runs`.
"no rebalance" is the same run's second before the first leave: the floor the machine gives.
The worker process's peak resident set is reported too.

Run: `.venv/bin/python benchmarks/bench_consumer_group_stall.py [--members N] [--topics T]
[--partitions P] [--runs R] [--mode loop|thread|process ...] [--assignor uniform|range]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from itertools import groupby
from typing import Literal

import assignors
from coordinator.groups import record_codec
from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.base import StoredRecord
from coordinator.groups.store.memory import MemoryStore
from coordinator.node.collector import tune_for_serving
from rebalance import CoordinatorConfig, GroupCoordinatorCore, SplitMix64
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.consumer_group.records import (
    Assignment,
    ConsumerGroupRecord,
    ConsumerValue,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberValue,
    TargetEpochValue,
    TargetMemberValue,
)
from rebalance.topics import TopicInfo, TopicMetadata

SMALL_GROUPS = 100
SMALL_MEMBERS = 10
Owned = tuple[tuple[str, tuple[int, ...]], ...]


def config(offload: bool, assignor: str = "uniform") -> CoordinatorConfig:
    return CoordinatorConfig.from_properties(
        {
            "group.consumer.assignors": assignor,
            "group.consumer.assignor.offload.enable": str(offload).lower(),
            # nobody expires during the run; targets batched once a second while forming
            "group.consumer.session.timeout.ms": "600000",
            "group.consumer.max.session.timeout.ms": "600000",
        }
    )


def join(group: str, member: str, topics: tuple[str, ...]) -> ConsumerGroupHeartbeat:
    return ConsumerGroupHeartbeat(
        group, member, 0, rebalance_timeout_ms=60000, subscribed_topic_names=topics,
        topic_partitions=(),
    )  # fmt: skip


@dataclass
class SmallMember:
    group: str
    member: str
    epoch: int = 0
    owned: Owned = ()
    samples: list[tuple[float, float]] = field(default_factory=list)  # (due, latency ms)

    async def run(
        self, runtime: GroupRuntime, start: float, period: float, stop: list[float]
    ) -> None:
        reply = await runtime.submit(join(self.group, self.member, ("small",)))
        self.epoch, self.owned = reply.member_epoch, reply.assignment or ()
        due = start
        while due < stop[0]:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            command = ConsumerGroupHeartbeat(
                self.group, self.member, self.epoch, topic_partitions=self.owned
            )
            reply = await runtime.submit(command)
            self.samples.append((due, (time.monotonic() - due) * 1000))
            self.epoch = reply.member_epoch
            if reply.assignment is not None:
                self.owned = reply.assignment
            due += period


def big_group_rows(metadata: TopicMetadata, members: int) -> list[StoredRecord]:
    """The stored rows of a stable 10,000-member group: every member subscribed to every topic
    but "small", its target (`uniform`'s fresh assignment) reconciled at epoch 2."""
    topics = sorted(n for n in metadata.topics if n != "small")
    ids = {n: metadata.topics[n].topic_id for n in topics}
    member_ids = [f"b{i:05d}" for i in range(members)]
    assigned = assignors.assign(
        "uniform",
        {m: topics for m in member_ids},
        {n: metadata.topics[n].partitions for n in topics},
    )
    epoch = 2
    subscribed = tuple((n, ids[n], metadata.topics[n].partitions) for n in topics)
    values: list[ConsumerValue] = [GroupEpochValue(epoch, subscribed)]
    targets: dict[str, Assignment] = {}
    for m in member_ids:
        values.append(
            MemberValue(m, None, None, "bench", "/127.0.0.1", 60000, tuple(topics), None, None)
        )
        targets[m] = tuple(
            sorted(
                (ids[name], tuple(p for _, p in run))
                for name, run in groupby(assigned[m], lambda tp: tp[0])
            )
        )
        values.append(TargetMemberValue(m, targets[m]))
    values.append(TargetEpochValue(epoch))
    values.extend(
        CurrentAssignmentValue(m, epoch, epoch - 1, "stable", targets[m], ()) for m in member_ids
    )
    return [record_codec.encode(ConsumerGroupRecord("big", v)) for v in values]


def big_group(runtime: GroupRuntime) -> ConsumerGroup:
    group = runtime.core.group("big")
    assert isinstance(group, ConsumerGroup)
    return group


async def settled(group: ConsumerGroup) -> None:
    while group.target_epoch != group.group_epoch:
        await asyncio.sleep(0.005)


def metadata(args: argparse.Namespace) -> TopicMetadata:
    topics = [TopicInfo(f"t{k:03d}", f"id-t{k:03d}", args.partitions) for k in range(args.topics)]
    return TopicMetadata.of([*topics, TopicInfo("small", "id-small", 10)])


MODES = {
    "loop": "on the loop (peer)",
    "thread": "assignor thread (peer)",
    "process": "worker process",
}
LEAVES = ("no rebalance", "first leave", "second leave", "priming")
"""The windows reported; "priming" (worker process only) comes first in time: the heartbeats due
while the worker is primed with the loaded group, before any leave."""


async def one_run(
    mode: str, args: argparse.Namespace, rows: list[StoredRecord]
) -> tuple[list[tuple[list[float], float, tuple[float, int]]], int]:
    """Per leave, (latencies in its window, ms from the leave to the new target applied); and
    the worker process's peak RSS in bytes (0 unless `mode` is "process")."""
    store = MemoryStore()
    await store.append(rows)
    core = GroupCoordinatorCore(config(mode != "loop", args.assignor), SplitMix64(1))
    core.topics_changed(metadata(args), 0)  # known before the load, as a node's topics are
    placement: Literal["process", "thread"] = "thread" if mode == "thread" else "process"
    runtime = GroupRuntime(core, store, assignor_worker=placement)
    await runtime.start()
    tune_for_serving()  # as `rebalance serve` does once loaded
    try:
        group = big_group(runtime)
        assert len(group.members) == args.members and group.kafka_state == "Stable"
        loop_start = time.monotonic() + 0.5
        period = args.period_ms / 1000
        stop = [float("inf")]
        members = [
            SmallMember(f"small-{g:03d}", f"s{g:03d}-{m}")
            for g in range(SMALL_GROUPS)
            for m in range(SMALL_MEMBERS)
        ]
        tasks = [
            asyncio.create_task(
                m.run(runtime, loop_start + period * k / len(members), period, stop)
            )
            for k, m in enumerate(members)
        ]
        worker = runtime.assignor_worker
        primed = time.monotonic()
        if worker is not None:  # the runtime primes it with the big group once loaded
            while worker.priming:
                await asyncio.sleep(0.005)
            primed = time.monotonic()
        priming = (loop_start, primed)  # the heartbeats due while it is primed (joins before)
        quiet = max(loop_start, primed) + 0.5
        await asyncio.sleep(max(loop_start + 2.5, quiet + 1.5) - time.monotonic())
        spans = [(quiet, time.monotonic() - 0.4)]  # nothing rebalances
        for n in range(2):
            left = time.monotonic()
            leaving = f"b{args.members - 1 - n:05d}"
            await runtime.submit(ConsumerGroupHeartbeat("big", leaving, -1))
            # a departure only bumps the group epoch (as Kafka's): a remaining member's next
            # heartbeat computes the target
            staying = group.members["b00000"]
            await runtime.submit(ConsumerGroupHeartbeat("big", "b00000", staying.member_epoch))
            await settled(group)
            applied = time.monotonic()
            spans.append((left, applied))
            await asyncio.sleep(1.5)  # the assignment interval passes
        stop[0] = time.monotonic()
        await asyncio.gather(*tasks)
        if worker is not None:
            spans.append(priming)
        peak = 0
        if runtime.assignor_worker is not None:
            peak = await runtime.assignor_worker.peak_rss()
        return [
            (
                [lat for m in members for due, lat in m.samples if left <= due <= applied + 0.2],
                (applied - left) * 1000,
                longest_collection(left, applied + 0.2),
            )
            for left, applied in spans
        ], peak
    finally:
        await runtime.close()


COLLECTIONS: list[tuple[float, float, int]] = []
"""The garbage collector's passes: (start, ms, generation), any thread."""
_collecting = [0.0]


def _collector(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _collecting[0] = time.monotonic()
    else:
        start = _collecting[0]
        COLLECTIONS.append((start, (time.monotonic() - start) * 1000, info["generation"]))


def longest_collection(left: float, right: float) -> tuple[float, int]:
    """The longest collector pass that began in [left, right]: ms, its generation."""
    passes = [(ms, gen) for start, ms, gen in COLLECTIONS if left <= start <= right]
    return max(passes, default=(0.0, -1))


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10_000, help="per topic")
    parser.add_argument("--period-ms", type=int, default=2000, help="small members' heartbeats")
    parser.add_argument("--mode", action="append", choices=list(MODES))
    parser.add_argument(
        "--assignor",
        choices=["uniform", "range"],
        default="uniform",
        help="the big group's (its loaded target is uniform's either way); range moves nearly "
        "every member's partitions on a leave, so the whole group's targets change",
    )
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.mode = args.mode or list(MODES)
    print(
        f"python {platform.python_version()}: {args.members} members x {args.topics} topics x "
        f"{args.partitions} partitions ({args.assignor}); {SMALL_GROUPS * SMALL_MEMBERS} "
        f"members in {SMALL_GROUPS} small groups heartbeating every {args.period_ms} ms"
    )
    print("load average at the start " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    gc.callbacks.append(_collector)
    start = time.perf_counter()
    rows = big_group_rows(metadata(args), args.members)
    print(f"big group's {len(rows):,} rows built in {time.perf_counter() - start:.1f} s")
    Row = tuple[float, float, float, float, int]
    figures: dict[tuple[str, int], list[Row]] = {}
    peaks: list[int] = []
    for run in range(args.runs):
        for mode in args.mode:  # alternated: the machine's load hits all alike
            spans, peak = asyncio.run(one_run(mode, args, rows))
            gc.unfreeze()
            gc.collect()
            if peak:
                peaks.append(peak)
            for n, (window, assign_ms, (gc_ms, gen)) in enumerate(spans):
                if not window:  # priming was over before the first heartbeat was due
                    window = [float("nan")]
                row = (
                    quantile(window, 0.5),
                    quantile(window, 0.99),
                    max(window),
                    assign_ms,
                    len(window),
                )
                figures.setdefault((mode, n), []).append(row)
                applied = f"; target applied {row[3]:.0f} ms after the leave" if n else ""
                if n == 3:
                    applied = f"; priming over {row[3]:.0f} ms after the small members began"
                print(
                    f"  run {run + 1} {MODES[mode]:<22} {LEAVES[n]}: p50 {row[0]:.1f} ms, "
                    f"p99 {row[1]:.1f} ms, max {row[2]:.1f} ms over {row[4]} heartbeats{applied}; "
                    f"longest GC pass {gc_ms:.0f} ms (gen {gen})"
                )
            if peak:
                print(f"  run {run + 1} worker process peak RSS {peak / 2**20:.0f} MiB")
    medians = {
        key: [statistics.median(r[i] for r in rows) for i in range(4)]
        for key, rows in figures.items()
    }
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"medians of {args.runs} (load average at the end {load}):")
    for (mode, n), (p50, p99, worst, assign_ms) in sorted(medians.items()):
        applied = f"; target applied {assign_ms:.0f} ms after the leave" if n else ""
        if n == 3:
            applied = f"; priming over {assign_ms:.0f} ms after the small members began"
        print(
            f"{MODES[mode]:<22} {LEAVES[n]:<12}: heartbeat p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
            f"max {worst:.1f} ms{applied}"
        )
    if peaks:
        print(f"worker process peak RSS: {statistics.median(peaks) / 2**20:.0f} MiB (median)")
    if "process" in args.mode:
        for peer in ("loop", "thread"):
            if peer in args.mode:
                ratios = [
                    f"{medians[(peer, n)][1] / medians[('process', n)][1]:.1f}x"
                    for n in range(1, 3)
                ]
                print(f"p99 {peer} / worker process (first, second leave): {', '.join(ratios)}")


if __name__ == "__main__":
    main()
