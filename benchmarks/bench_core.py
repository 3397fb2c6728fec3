"""Benchmarks of the pure core (no I/O): heartbeats/s, a 1000-member join+sync round,
creating and loading 100k groups, and bytes per idle group.

Peer, measured in the same run: attaching each group to one shared `transitions.Machine` with
`add_model` (what the library recommends for many models), against our table lookup that
attaches nothing per group.

Run: `.venv/bin/python benchmarks/bench_core.py [--repeat N] [--groups N]`. Figures are medians
over `--repeat` runs; the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable

from transitions import Machine

from rebalance import (
    CommitPartition,
    CommitTopic,
    CoordinatorConfig,
    GroupCoordinatorCore,
    Heartbeat,
    JoinGroup,
    OffsetCommit,
    SplitMix64,
    SyncGroup,
)
from rebalance.lifecycle import TRANSITIONS, GroupState
from rebalance.records import Record

CONFIG = CoordinatorConfig.from_properties({"group.initial.rebalance.delay.ms": "0"})
PROTOCOLS = (("range", b"\x00\x00\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff"),)


def median_of(repeat: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(repeat))


def loaded_core() -> GroupCoordinatorCore:
    core = GroupCoordinatorCore(CONFIG, SplitMix64(1))
    for p in range(CONFIG.offsets_topic_num_partitions):
        core.load(p, (), 0)
    return core


def form_group(core: GroupCoordinatorCore, group_id: str, n: int) -> tuple[list[str], int]:
    """n members join (v3, no MEMBER_ID_REQUIRED), the initial delay (0) passes, all sync."""
    for token in range(n):
        res = core.handle(
            JoinGroup(group_id, "", "consumer", PROTOCOLS, 10_000, 10_000, version=3), 0, token
        )
    group = core.group(group_id)
    assert group is not None
    while group.state is GroupState.JOINING:  # the initial delay (0 ms) fires, maybe twice
        res = core.on_timer(("join", group_id, ""), 0)
    replies = {r.token: r.response for r in res.replies}
    assert group is not None and group.state is GroupState.AWAITING_SYNC, group
    members = list(group.members)
    generation = group.generation
    leader = group.leader_id
    assert leader is not None and len(replies) == n
    assignment = tuple((m, b"x" * 24) for m in members)
    core.handle(SyncGroup(group_id, generation, leader, assignment, version=3), 0, "sync")
    for m in members:
        if m != leader:
            core.handle(SyncGroup(group_id, generation, m, version=3), 0, "sync")
    return [leader, *[m for m in members if m != leader]], generation


def bench_heartbeats(
    repeat: int, groups: int = 100, members: int = 10, beats: int = 200_000
) -> float:
    core = loaded_core()
    commands = []
    for g in range(groups):
        ids, generation = form_group(core, f"hb-{g}", members)
        commands += [Heartbeat(f"hb-{g}", generation, m, None, 4) for m in ids]

    def run() -> float:
        n = len(commands)
        start = time.perf_counter()
        for i in range(beats):
            core.handle(commands[i % n], i, i)
        return beats / (time.perf_counter() - start)

    return median_of(repeat, run)


def bench_round(repeat: int, members: int = 1000) -> tuple[float, float, list[float]]:
    """A non-initial rebalance of `members`: ms from the last JoinGroup to every SyncGroup
    reply, (separately) the time of the last JoinGroup alone, and the round by phase through
    `handle` with each command built inside its phase, as the wire builds one per request:
    the parked JoinGroups, the last JoinGroup, the parked SyncGroups, the leader's SyncGroup
    (thread CPU time: on a shared machine the wall clock also counts other work's time)."""

    def run() -> tuple[float, float, list[float]]:
        core = loaded_core()
        ids, generation = form_group(core, "round", members)
        # Every member rejoins; the last join completes the join phase synchronously.
        gc.collect()
        gc.disable()  # (as in `rebalance serve`, whose young threshold no round reaches)
        parking = time.thread_time()
        for i, m in enumerate(ids[:-1]):
            core.handle(
                JoinGroup("round", m, "consumer", PROTOCOLS, 10_000, 10_000, version=5), 1, i
            )
        start, start_cpu = time.perf_counter(), time.thread_time()
        res = core.handle(
            JoinGroup("round", ids[-1], "consumer", PROTOCOLS, 10_000, 10_000, version=5), 1, "last"
        )
        joined, joined_cpu = time.perf_counter(), time.thread_time()
        group = core.group("round")
        assert group is not None and len(res.replies) == members, len(res.replies)
        generation = group.generation
        leader = group.leader_id
        assert leader is not None
        for m in ids:
            if m != leader:
                core.handle(SyncGroup("round", generation, m, version=3), 1, m)
        synced = time.thread_time()
        assignment = tuple((m, b"y" * 24) for m in ids)
        res = core.handle(SyncGroup("round", generation, leader, assignment, version=3), 1, "L")
        done, done_cpu = time.perf_counter(), time.thread_time()
        gc.enable()
        assert len(res.replies) == members and group.state is GroupState.STABLE
        phases = [
            start_cpu - parking,
            joined_cpu - start_cpu,
            synced - joined_cpu,
            done_cpu - synced,
        ]
        return (done - start) * 1000, (joined - start) * 1000, [p * 1000 for p in phases]

    runs = [run() for _ in range(repeat)]
    phases = [statistics.median(r[2][i] for r in runs) for i in range(4)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), phases


def group_records(n: int) -> list[Record]:
    """Records of `n` idle one-member Stable groups, each with one committed offset."""
    core = loaded_core()
    records: list[Record] = []
    for g in range(n):
        gid = f"idle-{g}"
        res = core.handle(
            JoinGroup(gid, "", "consumer", PROTOCOLS, 10_000, 10_000, version=3), 0, 1
        )
        records += res.records
        group = core.group(gid)
        assert group is not None
        while group.state is GroupState.JOINING:
            records += core.on_timer(("join", gid, ""), 0).records
        assert group is not None and group.leader_id is not None
        res = core.handle(
            SyncGroup(
                gid, group.generation, group.leader_id, ((group.leader_id, b"a" * 24),), version=3
            ),
            0,
            2,
        )
        records += res.records
        res = core.offset_commit(
            OffsetCommit(
                gid,
                (CommitTopic("orders", (CommitPartition(0, 42),)),),
                group.generation,
                group.leader_id,
            ),
            0,
            3,
        )
        records += res.records
        assert len(res.records) == 1, res.replies  # the commit was accepted
    return records


def bench_load(repeat: int, n: int) -> tuple[float, float, float]:
    """(create s, load s, bytes per idle group)."""
    start = time.perf_counter()
    records = group_records(n)
    create_s = time.perf_counter() - start
    by_partition: dict[int, list[Record]] = {}
    probe = GroupCoordinatorCore(CONFIG)
    for r in records:
        by_partition.setdefault(probe.partition_for(r.group_id), []).append(r)

    def load_once() -> GroupCoordinatorCore:
        core = GroupCoordinatorCore(CONFIG, SplitMix64(2))
        for p in range(CONFIG.offsets_topic_num_partitions):
            core.load(p, by_partition.get(p, ()), 1000)
        return core

    def run() -> float:
        gc.collect()
        start = time.perf_counter()
        core = load_once()
        elapsed = time.perf_counter() - start
        assert len(core.groups()) == n
        return elapsed

    load_s = median_of(repeat, run)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    core = load_once()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # Timers armed at load (one session per member) are part of the coordinator's cost too.
    assert len(core.groups()) == n
    return create_s, load_s, (after - before) / n


class _Model:
    """A transitions model, as the library would have it: one per group."""


def bench_add_model(n: int) -> tuple[float, float]:
    """(seconds to attach n groups to one shared Machine, seconds for our n group creations)."""
    machine = Machine(
        model=None,
        states=GroupState,
        transitions=TRANSITIONS,
        initial=None,
        auto_transitions=False,
    )
    models = [_Model() for _ in range(n)]
    start = time.perf_counter()
    for m in models:
        machine.add_model(m, initial=GroupState.STABLE)
    theirs = time.perf_counter() - start
    from rebalance.classic.group import Group
    from rebalance.lifecycle import fire

    start = time.perf_counter()
    for i in range(n):
        g = Group(str(i), 0)
        fire(g, "load")
        fire(g, "loaded")
    ours = time.perf_counter() - start
    return theirs, ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--groups", type=int, default=100_000)
    args = parser.parse_args()
    print(f"# core benchmarks — Python {platform.python_version()}, {platform.machine()}")
    hb = bench_heartbeats(args.repeat)
    print(f"heartbeats/s (core only, 1000 members in 100 groups): {hb:,.0f}  [target >= 200,000]")
    total_ms, join_ms, phases = bench_round(args.repeat)
    print(
        f"1000-member round, last JoinGroup -> all SyncGroup replies: {total_ms:.1f} ms "
        f"(last join alone {join_ms:.1f} ms)  [target <= 20 ms]"
    )
    print(
        "  by phase, commands built inside: 999 parked joins {:.1f} ms, the last join {:.1f}, "
        "999 parked syncs {:.1f}, the leader's sync {:.1f}: {:.1f} ms".format(*phases, sum(phases))
    )
    create_s, load_s, per_group = bench_load(max(1, args.repeat // 2), args.groups)
    print(f"create {args.groups:,} groups through handlers: {create_s:.2f} s")
    print(f"load {args.groups:,} groups from records: {load_s:.2f} s  [target <= 5 s]")
    print(f"bytes per idle group (1 member, 1 offset, session timer): {per_group:,.0f}  [<= 2 KB]")
    for n in (4_000, 16_000):
        theirs, ours = bench_add_model(n)
        print(
            f"attach {n:,} groups: transitions add_model {theirs * 1000:.0f} ms, "
            f"our table {ours * 1000:.1f} ms, ratio {theirs / ours:.0f}x"
        )


if __name__ == "__main__":
    main()
