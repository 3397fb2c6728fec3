"""Assignor benchmarks: ours side by side with kafka-python's and aiokafka's, in one run.

Run: ``.venv/bin/python benchmarks/bench_assignors.py`` (about 10 minutes on 2 cores);
``--quick`` runs scenario A only, ``--only CD`` picks scenarios.

Scenarios (member ids ``member-00000...``, topics ``topic-0000...``):

* A: 100 members x 10 topics x 100 partitions (1k): range, roundrobin, sticky and
  cooperative-sticky fresh and "join" (a balanced assignment of N-1 members plus one new member,
  the previous assignment carried in each library's own format).
* B: 1,000 members x 1 topic x 10k partitions: same rows.
* C: 2,000 members x 100 topics x 10k partitions (1M): our sticky and cooperative-sticky, fresh,
  after one member leaves, and after one joins. The peers are not run here (their sticky
  builds a list of every potential partition per member: O(members x partitions)).
* D: uniform, 10,000 members x 100 topics x 10k partitions (1M): fresh, leave, join.

Each figure is the median of ``--repeat`` timed ``assign`` calls (one call per fresh process
state; inputs are built before the clock starts). Peers' sticky at B is timed once (too slow to
repeat). "moved" counts partitions whose owner changed; "min" is the least possible (the
newcomer's floor(P/N) on a join, the leaver's partitions on a leave). Peak memory is the peak of
Python allocations during one ``assign`` call (tracemalloc, in a separate untimed call).
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import assignors
from assignors.aiokafka import assignor as aiokafka_plugin
from assignors.spec import GroupSpec, MemberSubscription, StaticTopics

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange
    from aiokafka.coordinator.assignors.roundrobin import (
        RoundRobinPartitionAssignor as AioRoundRobin,
    )
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import (
        StickyPartitionAssignor as AioSticky,
    )
    from aiokafka.coordinator.protocol import ConsumerProtocol
    from aiokafka.structs import TopicPartition as AioTP
    from kafka.coordinator.assignors.cooperative_sticky import (
        CooperativeStickyAssignor as KpCooperative,
    )
    from kafka.coordinator.assignors.range import RangePartitionAssignor as KpRange
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as KpRoundRobin
    from kafka.coordinator.assignors.sticky.sticky_assignor import (
        StickyPartitionAssignor as KpSticky,
    )
    from kafka.structs import TopicPartition as KpTP

Assignment = dict[str, list[tuple[str, int]]]


class FakeCluster:
    """What the Python clients' assignors read from ClusterMetadata."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self._counts = partitions

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self._counts.get(topic)
        return None if n is None else set(range(n))


def median_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(repeat):
        result = None  # free the previous result before the clock starts
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def peak_mib(fn: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def moved(before: Assignment, after: Assignment) -> int:
    owner = {tp: m for m, tps in before.items() for tp in tps}
    return sum(1 for m, tps in after.items() for tp in tps if owner.get(tp) != m)


def flatten(result: dict[str, Any]) -> Assignment:
    out: Assignment = {}
    for member, assignment in result.items():
        pairs = getattr(assignment, "assigned_partitions", None) or assignment.assignment
        out[member] = sorted((t, p) for t, ps in pairs for p in ps)
    return out


class Group:
    """One scenario's inputs in every library's shape."""

    def __init__(self, members: int, topics: int, per_topic: int) -> None:
        self.topics = [f"topic-{t:04d}" for t in range(topics)]
        self.partitions = dict.fromkeys(self.topics, per_topic)
        self.total = topics * per_topic
        self.ids = [f"member-{i:05d}" for i in range(members)]
        self.describer = StaticTopics(self.partitions)
        self.cluster = FakeCluster(self.partitions)

    def spec(self, ids: list[str], owned: Assignment | None = None) -> GroupSpec:
        subscription = frozenset(self.topics)
        owned = owned or {}
        return GroupSpec(
            {
                m: MemberSubscription(
                    subscription, tuple(owned.get(m, ())), 1 if m in owned else None
                )
                for m in ids
            }
        )

    def kp_members(self, ids: list[str], owned: Assignment | None = None) -> list[Any]:
        out = []
        for m in ids:
            previous = (owned or {}).get(m)
            if previous is None:
                user_data = b""
            else:
                sub = KpSticky._metadata(self.topics, [KpTP(t, p) for t, p in previous], 1)
                user_data = bytes(sub.user_data.encode())
            out.append(
                SimpleNamespace(
                    member_id=m,
                    group_instance_id=None,
                    metadata=SimpleNamespace(topics=list(self.topics), user_data=user_data),
                )
            )
        return out

    def kp_coop_members(self, ids: list[str], owned: Assignment | None = None) -> list[Any]:
        out = []
        for m in ids:
            previous = (owned or {}).get(m, [])
            by_topic: dict[str, list[int]] = {}
            for t, p in previous:
                by_topic.setdefault(t, []).append(p)
            owned_field = [SimpleNamespace(topic=t, partitions=ps) for t, ps in by_topic.items()]
            metadata = SimpleNamespace(
                topics=list(self.topics),
                user_data=b"",
                owned_partitions=owned_field,
                generation_id=1 if previous else -1,
            )
            out.append(SimpleNamespace(member_id=m, group_instance_id=None, metadata=metadata))
        return out

    def aio_members(self, ids: list[str], owned: Assignment | None = None) -> dict[str, Any]:
        out = {}
        for m in ids:
            previous = (owned or {}).get(m)
            tps = None if previous is None else [AioTP(t, p) for t, p in previous]
            out[m] = ConsumerProtocol.METADATA.decode(
                AioSticky._metadata(self.topics, tps, 1).encode()
            )
        return out

    def plugin_members(self, ids: list[str], owned: Assignment | None = None) -> dict[str, Any]:
        """Our aiokafka plug-in's wire metadata, as an aiokafka leader decodes it."""
        out = {}
        for m in ids:
            plugin = aiokafka_plugin("sticky")
            if owned and m in owned:
                plugin._assignment = tuple(owned[m])
                plugin._generation = 1
            out[m] = ConsumerProtocol.METADATA.decode(plugin.metadata(self.topics))
        return out


def row(
    scenario: str, what: str, ours: float, peers: dict[str, float | None], extra: str = ""
) -> None:
    cells = [f"{ours:9.1f}"]
    for name in ("kafka-python", "aiokafka"):
        value = peers.get(name)
        if value is None:
            cells.append(f"{'n/a':>9} {'':>7}")
        else:
            cells.append(f"{value:9.1f} ({value / ours:.1f}x)")
    print(f"| {scenario} | {what:<28} | " + " | ".join(cells) + f" | {extra} |", flush=True)


def header(title: str) -> None:
    print(f"\n{title}\n")
    print("| | assignor | ours ms | kafka-python ms (ratio) | aiokafka ms (ratio) | moves |")
    print("|---|---|---:|---:|---:|---|")


def scenario_small(label: str, group: Group, repeat: int, peer_repeat: int) -> None:
    ids = group.ids
    old_ids = ids[:-1]
    header(f"Scenario {label}: {len(ids)} members x {group.total} partitions")
    spec = group.spec(ids)

    for name, kp, aio in (
        ("range", KpRange, AioRange),
        ("roundrobin", KpRoundRobin, AioRoundRobin),
    ):
        ours, _ = median_ms(lambda n=name: assignors.get(n).assign(spec, group.describer), repeat)
        kp_members = group.kp_members(ids)
        aio_members = group.aio_members(ids)
        t_kp, _ = median_ms(lambda k=kp, ms=kp_members: k.assign(group.cluster, ms), repeat)
        t_aio, _ = median_ms(lambda a=aio, ms=aio_members: a.assign(group.cluster, ms), repeat)
        row(label, name, ours, {"kafka-python": t_kp, "aiokafka": t_aio})

    # sticky fresh / join
    sticky = assignors.get("sticky")
    ours, previous = median_ms(lambda: sticky.assign(group.spec(old_ids), group.describer), repeat)
    t_fresh, _ = median_ms(lambda: sticky.assign(spec, group.describer), repeat)
    join_spec = group.spec(ids, previous)
    t_join, joined = median_ms(lambda: sticky.assign(join_spec, group.describer), repeat)
    minimum = group.total // len(ids)
    kp_fresh = group.kp_members(ids)
    kp_join = group.kp_members(ids, previous)
    aio_fresh = group.aio_members(ids)
    aio_join = group.aio_members(ids, previous)
    t_kp_fresh, _ = median_ms(lambda: KpSticky().assign(group.cluster, kp_fresh), peer_repeat)
    t_kp_join, kp_joined = median_ms(lambda: KpSticky().assign(group.cluster, kp_join), peer_repeat)
    t_aio_fresh, _ = median_ms(lambda: AioSticky.assign(group.cluster, aio_fresh), peer_repeat)
    t_aio_join, aio_joined = median_ms(
        lambda: AioSticky.assign(group.cluster, aio_join), peer_repeat
    )
    row(label, "sticky fresh", t_fresh, {"kafka-python": t_kp_fresh, "aiokafka": t_aio_fresh})
    row(
        label,
        "sticky join",
        t_join,
        {"kafka-python": t_kp_join, "aiokafka": t_aio_join},
        f"ours {moved(previous, joined)}, kafka-python {moved(previous, flatten(kp_joined))}, "
        f"aiokafka {moved(previous, flatten(aio_joined))} (min {minimum})",
    )
    plugin = aiokafka_plugin("sticky")
    plugin_join = group.plugin_members(ids, previous)
    t_plugin, _ = median_ms(lambda: plugin.assign(group.cluster, plugin_join), repeat)
    row(
        label,
        "sticky join via aiokafka plug-in",
        t_plugin,
        {"aiokafka": t_aio_join},
        "incl. user-data decode + assignment encode",
    )

    coop = assignors.get("cooperative-sticky")
    t_cfresh, _ = median_ms(lambda: coop.assign(spec, group.describer), repeat)
    t_cjoin, round1 = median_ms(lambda: coop.assign(join_spec, group.describer), repeat)
    withheld = group.total - sum(len(v) for v in round1.values())
    kp_cfresh = group.kp_coop_members(ids)
    kp_cjoin = group.kp_coop_members(ids, previous)
    t_kp_cfresh, _ = median_ms(
        lambda: KpCooperative().assign(group.cluster, kp_cfresh), peer_repeat
    )
    t_kp_cjoin, kp_round1 = median_ms(
        lambda: KpCooperative().assign(group.cluster, kp_cjoin), peer_repeat
    )
    kp_withheld = group.total - sum(len(v) for v in flatten(kp_round1).values())
    row(label, "cooperative-sticky fresh", t_cfresh, {"kafka-python": t_kp_cfresh})
    row(
        label,
        "cooperative-sticky join",
        t_cjoin,
        {"kafka-python": t_kp_cjoin},
        f"round 1 withholds: ours {withheld}, kafka-python {kp_withheld}",
    )


def scenario_large(label: str, name: str, group: Group, repeat: int) -> None:
    header(f"Scenario {label}: {name}, {len(group.ids)} members x {group.total} partitions")
    assignor = assignors.get(name)
    spec = group.spec(group.ids)
    t_fresh, fresh = median_ms(lambda: assignor.assign(spec, group.describer), repeat)
    mem_fresh = peak_mib(lambda: assignor.assign(spec, group.describer))
    row(label, f"{name} fresh", t_fresh, {}, f"peak {mem_fresh:.0f} MiB")

    leaver = group.ids[-1]
    stay = group.ids[:-1]
    leave_spec = group.spec(stay, {m: fresh[m] for m in stay})
    t_leave, after_leave = median_ms(lambda: assignor.assign(leave_spec, group.describer), repeat)
    mem_leave = peak_mib(lambda: assignor.assign(leave_spec, group.describer))
    lost = group.total - sum(len(v) for v in after_leave.values())
    row(
        label,
        f"{name} one leaves",
        t_leave,
        {},
        f"moved {moved(fresh, after_leave)} (min {len(fresh[leaver])}), withheld {lost}, "
        f"peak {mem_leave:.0f} MiB",
    )
    joiner = "member-99999"
    join_spec = group.spec([*group.ids, joiner], fresh)
    t_join, after_join = median_ms(lambda: assignor.assign(join_spec, group.describer), repeat)
    lost = group.total - sum(len(v) for v in after_join.values())
    row(
        label,
        f"{name} one joins",
        t_join,
        {},
        f"moved {moved(fresh, after_join)} (min {group.total // (len(group.ids) + 1)}), "
        f"withheld {lost}",
    )


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="scenario A only")
    parser.add_argument("--only", default="ABCD", help="scenarios to run, e.g. CD")
    args = parser.parse_args()
    only = "A" if args.quick else args.only.upper()
    print(f"machine: {machine()}")
    if "A" in only:
        scenario_small("A", Group(100, 10, 100), args.repeat, args.repeat)
    if "B" in only:
        scenario_small("B", Group(1000, 1, 10_000), args.repeat, 1)
    if "C" in only:
        for name in ("sticky", "cooperative-sticky"):
            scenario_large("C", name, Group(2000, 100, 10_000), args.repeat)
    if "D" in only:
        scenario_large("D", "uniform", Group(10_000, 100, 10_000), args.repeat)


if __name__ == "__main__":
    main()
