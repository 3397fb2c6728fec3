"""Assignor benchmarks: ours beside the peers, the code before the rewrite and Java, in one run.

Run: ``.venv/bin/python benchmarks/bench_assignors.py`` runs scenario J, ours beside Apache
Kafka's own assignors in the same run (``--small``: a tenth of each size; ``--case uniform``: the
cases whose name says so); ``--only ABCDEFGMJ`` runs the older scenarios too (about 20 minutes
more on 2 cores); ``--quick`` runs scenario A only.

* J: every assignor Kafka has a counterpart of, ours through ``assignors.assign`` and Java's
  (kafka-clients 4.4.0: range, roundrobin, sticky, cooperative-sticky at 1,000 members x 10k
  partitions and cooperative-sticky at 2,000 x 1M; kafka-group-coordinator 4.4.0: uniform with
  equal and with unequal subscriptions, and range, at 10,000 members x 1M = 100 topics x 10k),
  epoch by epoch: fresh, one member joins, one leaves, one changes its subscription, each side
  from its own previous result. Java runs in the harness `scripts/ensure-java-assignors` builds
  (`tests/assignors/java_assignors.py`): the assign call alone is timed, after a JIT warm-up,
  median of `JAVA_REPEAT`; ours is the median of ``--repeat`` calls, wall clock. Balance gap
  (`java_assignors.balance_gap`, balanced: <= 1) and moves (partitions taken from their holder)
  are printed for both sides, and how many partitions have the same owner on both.

Scenarios (member ids ``member-00000...``, topics ``topic-0000...``, equal subscriptions):

* A: 100 members x 10 topics x 100 partitions (1k): range, roundrobin, sticky and
  cooperative-sticky fresh and "join" (a balanced assignment of N-1 members plus one new member,
  the previous assignment carried in each library's own format), beside kafka-python and
  aiokafka and Java's recorded figure.
* B: 1,000 members x 1 topic x 10k partitions: same rows.
* C: cooperative-sticky, 2,000 members x 1M partitions (Java's shape 500 x 2,000, and 100 x
  10k): fresh, one member leaves, one joins, one owns nothing ("emptied", Java's re-assign).
* D: uniform, 10,000 members x 100 topics x 10k (1M): fresh, leave, join.
* E: uniform through ``assignors.assign`` (plain mappings, warm and cold pair tuples), and epoch
  by epoch with the previous outcome (``UniformAssignor.assign_incremental``): a leave, a join,
  a topic gaining partitions.
* F: sticky, 10,000 members x 1M. G: range, 10,000 members x 1M (100 x 10k and 1,000 x 1,000).
* M: peak RSS of one assignment, in a child process per row, ours and before the rewrite.

From C on, "before" is the frozen copy of the assignors before the speed work of issue 21
(``tests/assignors/assignors_legacy``, the equality test's oracle), timed in the same run on
the same inputs. Each figure is the median of ``--repeat`` calls, wall clock and CPU time of
this process (the machine is shared: under load the wall clock mostly measures waiting; CPU
time is the steadier figure). Inputs are built before the clock starts and the previous
result is freed first. In A to G, Java's figures are recorded ones (see `JAVA_SOURCE`); J measures
Java in the same run. "moved" counts
partitions whose owner changed; "min" is the least possible (the newcomer's floor(P/N) on a
join, the leaver's partitions on a leave).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import assignors
from assignors.aiokafka import assignor as aiokafka_plugin
from assignors.balance import BalanceOutcome
from assignors.pairs import clear_pair_tables
from assignors.spec import GroupSpec, MemberSubscription, StaticTopics
from assignors.uniform import UniformAssignor

# the frozen pre-rewrite assignors (the equality test's oracle) give the "before" column
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "assignors"))
legacy: Any = importlib.import_module("assignors_legacy")
# Apache Kafka's own assignors (tests/assignors/java_assignors.py drives the Java harness)
java: Any = importlib.import_module("java_assignors")
JAVA_VERSION = "4.4.0"
JAVA_WARMUP = 5
JAVA_REPEAT = 7

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
    java = JAVA_SMALL.get((scenario, what))
    cells = [f"{ours:9.1f}", "" if java is None else f"{java:.1f} ({ours / java:.1f}x Java)"]
    for name in ("kafka-python", "aiokafka"):
        value = peers.get(name)
        if value is None:
            cells.append(f"{'n/a':>9} {'':>7}")
        else:
            cells.append(f"{value:9.1f} ({value / ours:.1f}x)")
    print(f"| {scenario} | {what:<28} | " + " | ".join(cells) + f" | {extra} |", flush=True)


def header(title: str) -> None:
    print(f"\n{title}\n")
    print(
        "| | assignor | ours ms | Java ms (recorded) | kafka-python ms (ratio) "
        "| aiokafka ms (ratio) | moves |"
    )
    print("|---|---|---:|---:|---:|---:|---|")


def scenario_small(label: str, group: Group, repeat: int, peer_repeat: int) -> None:
    ids = group.ids
    old_ids = ids[:-1]
    header(f"Scenario {label}: {len(ids)} members x {group.total} partitions")
    spec = group.spec(ids)

    for name, kp, aio in (
        ("range", KpRange, AioRange),
        ("roundrobin", KpRoundRobin, AioRoundRobin),
    ):
        ours, _ = median_ms(
            functools.partial(assignors.get(name).assign, spec, group.describer), repeat
        )
        kp_members = group.kp_members(ids)
        aio_members = group.aio_members(ids)
        t_kp, _ = median_ms(functools.partial(kp.assign, group.cluster, kp_members), repeat)
        t_aio, _ = median_ms(functools.partial(aio.assign, group.cluster, aio_members), repeat)
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


JAVA_SOURCE = (
    "Java figures are the ones recorded in the spec (section 5.2): Apache Kafka's assignors built "
    "from commit 1eb7644 on a 2-vCPU Intel Xeon VM with 23 GiB, OpenJDK 17.0.15 (best of 5; "
    "cooperative-sticky at 1M a single run). They were not re-run here: Kafka's jars are on none "
    "of the registries this machine reaches (PyPI, Debian, npm)."
)
JAVA_SMALL = {
    ("A", "range"): 1.3,
    ("A", "roundrobin"): 0.5,
    ("A", "sticky fresh"): 0.6,
    ("A", "sticky join"): 0.7,
    ("A", "cooperative-sticky fresh"): 0.6,
    ("A", "cooperative-sticky join"): 1.0,
    ("B", "range"): 6.1,
    ("B", "roundrobin"): 3.1,
    ("B", "sticky fresh"): 5.9,
    ("B", "sticky join"): 4.3,
    ("B", "cooperative-sticky fresh"): 6.2,
    ("B", "cooperative-sticky join"): 7.6,
}


def timed(
    fn: Callable[[], Any], repeat: int, setup: Callable[[], None] | None = None
) -> tuple[float, float, Any]:
    """Median wall and CPU milliseconds of ``repeat`` calls, and the last result."""
    walls, cpus = [], []
    result = None
    for _ in range(repeat):
        result = None
        if setup is not None:
            setup()
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        result = fn()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus), result


def timed_pair(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """`timed` without the result (the frozen copy's results are not kept around)."""
    wall, cpu, _ = timed(fn, repeat)
    return wall, cpu


class Large:
    """A large group with equal subscriptions, as `GroupSpec`s and as `assign` arguments."""

    def __init__(self, members: int, topics: int, per_topic: int) -> None:
        self.topics = [f"topic-{t:04d}" for t in range(topics)]
        self.topic_set = frozenset(self.topics)
        self.partitions = dict.fromkeys(self.topics, per_topic)
        self.total = topics * per_topic
        self.ids = [f"member-{i:05d}" for i in range(members)]
        self.describer = StaticTopics(self.partitions)

    def spec(self, ids: list[str], owned: Assignment | None = None) -> GroupSpec:
        """Members ``ids``; those in ``owned`` own their partitions there (generation 1)."""
        owned = owned or {}
        return GroupSpec(
            {
                m: MemberSubscription(
                    self.topic_set, tuple(owned.get(m, ())), 1 if m in owned else None
                )
                for m in ids
            }
        )

    def label(self) -> str:
        per_topic = self.total // len(self.topics)
        return f"{len(self.ids):,} members x {len(self.topics)} topics x {per_topic:,}"


def large_header(title: str) -> None:
    print(f"\n{title}\n")
    print(
        "| case | ours ms (CPU ms) | before ms (CPU ms) | ratio before/ours, wall (CPU) "
        "| Java ms (recorded) | notes |"
    )
    print("|---|---:|---:|---:|---:|---|")


def large_row(
    what: str,
    ours: tuple[float, float],
    before: tuple[float, float] | None = None,
    java: float | None = None,
    notes: str = "",
) -> None:
    wall, cpu = ours
    before_cell = (
        " | "
        if before is None
        else f"{before[0]:,.0f} ({before[1]:,.0f}) | "
        f"{before[0] / wall:.1f}x ({before[1] / cpu:.1f}x)"
    )
    java_cell = "none recorded" if java is None else f"{java:,.0f} ({wall / java:.1f}x Java)"
    print(
        f"| {what} | {wall:,.0f} ({cpu:,.0f}) | {before_cell} | {java_cell} | {notes} |",
        flush=True,
    )


def scenario_large(
    name: str, group: Large, repeat: int, java: Mapping[str, float], emptied: bool = False
) -> None:
    """Fresh, one member leaves, one joins (and one emptied): ours against the frozen copy."""
    large_header(f"{name}, {group.label()} ({group.total:,} partitions)")
    ours, before = assignors.get(name), legacy.ASSIGNORS[name]
    spec = group.spec(group.ids)
    wall, cpu, fresh = timed(lambda: ours.assign(spec, group.describer), repeat)
    old = timed_pair(lambda: before.assign(spec, group.describer), repeat)
    large_row("fresh", (wall, cpu), old, java.get("fresh"))
    stay = group.ids[:-1]
    leave_spec = group.spec(stay, {m: fresh[m] for m in stay})
    wall, cpu, after = timed(lambda: ours.assign(leave_spec, group.describer), repeat)
    old = timed_pair(lambda: before.assign(leave_spec, group.describer), repeat)
    lost = group.total - sum(map(len, after.values()))
    large_row(
        "one member leaves",
        (wall, cpu),
        old,
        java.get("leave"),
        f"moved {moved(fresh, after)} (min {len(fresh[group.ids[-1]])}), withheld {lost}",
    )
    join_spec = group.spec([*group.ids, "member-99999"], fresh)
    wall, cpu, after = timed(lambda: ours.assign(join_spec, group.describer), repeat)
    old = timed_pair(lambda: before.assign(join_spec, group.describer), repeat)
    lost = group.total - sum(map(len, after.values()))
    large_row(
        "one member joins",
        (wall, cpu),
        old,
        java.get("join"),
        f"moved {moved(fresh, after)} (min {group.total // (len(group.ids) + 1)}), withheld {lost}",
    )
    if emptied:
        owned = {m: fresh[m] for m in group.ids[1:]}
        empty_spec = group.spec(group.ids, owned)
        wall, cpu, after = timed(lambda: ours.assign(empty_spec, group.describer), repeat)
        old = timed_pair(lambda: before.assign(empty_spec, group.describer), repeat)
        large_row(
            "one member emptied (owns nothing)",
            (wall, cpu),
            old,
            java.get("emptied"),
            f"moved {moved(fresh, after)}",
        )


def scenario_uniform_public(group: Large, repeat: int) -> None:
    """Through `assignors.assign` (what the issue measured): plain mappings in, sorted lists out;
    cold = the shared per-topic pair tuples dropped before each call."""
    large_header(f"uniform through assignors.assign, {group.label()}")
    subs = {m: group.topics for m in group.ids}
    wall, cpu, fresh = timed(lambda: assignors.assign("uniform", subs, group.partitions), repeat)
    old = timed_pair(lambda: legacy.assign("uniform", subs, group.partitions), repeat)
    large_row("fresh", (wall, cpu), old, 44, "shared pair tuples warm")
    cold = timed(
        lambda: assignors.assign("uniform", subs, group.partitions), repeat, clear_pair_tables
    )
    large_row("fresh, cold", cold[:2], old, 44, "pair tuples built in the call")
    stay = {m: group.topics for m in group.ids[:-1]}
    owned = {m: fresh[m] for m in stay}
    generations = dict.fromkeys(stay, 1)

    def leave() -> Any:
        return assignors.assign(
            "uniform", stay, group.partitions, owned=owned, generations=generations
        )

    def leave_before() -> Any:
        return legacy.assign(
            "uniform", stay, group.partitions, owned=owned, generations=generations
        )

    wall, cpu, _ = timed(leave, repeat)
    old = timed_pair(leave_before, repeat)
    large_row("one member leaves", (wall, cpu), old, 35, "Java's figure is its join")


def scenario_uniform_epochs(group: Large, repeat: int) -> None:
    """Epoch after epoch with the previous outcome (`UniformAssignor.assign_incremental`), as a
    KIP-848 coordinator keeping each member's target as a tuple would call it."""
    large_header(f"uniform, epoch by epoch with the previous outcome, {group.label()}")
    uniform = UniformAssignor()
    before = legacy.ASSIGNORS["uniform"]
    spec0 = group.spec(group.ids)
    wall, cpu, epoch0 = timed(lambda: uniform.assign_incremental(spec0, group.describer), repeat)
    old = timed_pair(lambda: before.assign(spec0, group.describer), repeat)
    large_row("epoch 0: fresh (keeps the hint)", (wall, cpu), old, 44)

    def targets(outcome: BalanceOutcome) -> dict[str, tuple[tuple[str, int], ...]]:
        assert outcome.hint is not None
        return {m: pairs for m, (pairs, _) in outcome.hint.members.items()}

    steps: list[tuple[str, Callable[[dict[str, Any]], GroupSpec], StaticTopics, float | None]] = []
    grown = StaticTopics(
        {**group.partitions, group.topics[0]: group.total // len(group.topics) + 100}
    )
    steps.append(
        (
            "epoch 1: one member leaves",
            lambda held: GroupSpec(
                {m: MemberSubscription(group.topic_set, held[m]) for m in group.ids[:-1]}
            ),
            group.describer,
            None,
        )
    )
    steps.append(
        (
            "epoch 2: one member joins",
            lambda held: GroupSpec(
                {
                    m: MemberSubscription(group.topic_set, held.get(m, ()))
                    for m in [*group.ids[:-1], "member-99999"]
                }
            ),
            group.describer,
            35,
        )
    )
    steps.append(
        (
            "epoch 3: one topic gains 100 partitions",
            lambda held: GroupSpec({m: MemberSubscription(group.topic_set, held[m]) for m in held}),
            grown,
            None,
        )
    )
    previous = epoch0
    for what, make, describer, java in steps:
        spec = make(targets(previous))
        wall, cpu, outcome = timed(
            functools.partial(uniform.assign_incremental, spec, describer, previous), repeat
        )
        old = timed_pair(functools.partial(before.assign, spec, describer), repeat)
        changed = moved(previous.assignment, outcome.assignment)
        large_row(what, (wall, cpu), old, java, f"moved {changed}")
        previous = outcome


def scenario_range(repeat: int) -> None:
    for group in (Large(10_000, 100, 10_000), Large(10_000, 1_000, 1_000)):
        large_header(f"range, {group.label()} ({group.total:,} partitions)")
        spec = group.spec(group.ids)
        ours = timed(
            functools.partial(assignors.get("range").assign, spec, group.describer), repeat
        )
        old = timed_pair(
            functools.partial(legacy.ASSIGNORS["range"].assign, spec, group.describer), repeat
        )
        java = 63 if len(group.topics) == 1_000 else None
        note = "Java: server range, same shape" if java else "Java: 1M only at 1,000 x 1,000"
        large_row("fresh", ours[:2], old, java, note)


# -- ours beside Apache Kafka's own assignors, measured in this run ---------------------------


def _java_cases(small: bool) -> list[Any]:
    """The cases of the Java comparison: every assignor Kafka has a counterpart of, epoch by
    epoch (fresh, one member joins, one leaves, one changes its subscription)."""
    case, epoch = java.Case, java.Epoch

    def epochs(first: str, everything: list[str], narrower: list[str]) -> list[Any]:
        return [
            epoch("fresh"),
            epoch("join", joins={"member-99999": everything}),
            epoch("leave", leaves=[first]),
            epoch("subscribe", subscribes={"member-00001": narrower}),
        ]

    def layout(topics: int, per_topic: int) -> tuple[list[str], dict[str, int]]:
        names = [f"topic-{t:04d}" for t in range(topics)]
        return names, dict.fromkeys(names, per_topic)

    scale = 10 if small else 1
    cases = []
    topics, partitions = layout(1, 10_000 // scale)
    ids = [f"member-{i:05d}" for i in range(1_000 // scale)]
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        cases.append(
            case(
                f"{name} {len(ids):,} x 10k",
                name,
                partitions,
                dict.fromkeys(ids, topics),
                epochs(ids[0], topics, topics),
            )
        )
    topics, partitions = layout(500 // scale, 2_000 // scale)
    ids = [f"member-{i:05d}" for i in range(2_000 // scale)]
    cases.append(
        case(
            f"cooperative-sticky {len(ids):,} x 1M",
            "cooperative-sticky",
            partitions,
            dict.fromkeys(ids, topics),
            epochs(ids[0], topics, topics[: len(topics) // 2]),
        )
    )
    topics, partitions = layout(100 // scale, 10_000 // scale)
    ids = [f"member-{i:05d}" for i in range(10_000 // scale)]
    half = topics[: len(topics) // 2]
    equal = dict.fromkeys(ids, topics)
    # unequal: member i subscribes to every topic but those t with t = i (mod 4)
    unequal = {m: [t for k, t in enumerate(topics) if k % 4 != i % 4] for i, m in enumerate(ids)}
    total = f"{len(ids):,} x {sum(partitions.values()):,}"
    cases.append(
        case(f"uniform equal {total}", "uniform", partitions, equal, epochs(ids[0], topics, half))
    )
    cases.append(
        case(
            f"uniform unequal {total}", "uniform", partitions, unequal, epochs(ids[0], topics, half)
        )
    )
    cases.append(
        case(
            f"server range {total}", "server-range", partitions, equal, epochs(ids[0], topics, half)
        )
    )
    return cases


def _timed_ours(run: Any, repeat: int, times: list[float], subscriptions: Any, owned: Any) -> Any:
    wall, _, result = timed(lambda: run(subscriptions, owned), repeat)
    times.append(wall)
    return result


def scenario_java(
    repeat: int, small: bool, only: str | None, java_repeat: int = JAVA_REPEAT
) -> None:
    """Each case's epochs on both sides, each from its own previous result; timings are medians
    (ours: wall clock of `assignors.assign`; Java: the assign call, after a JIT warm-up)."""
    try:
        java.harness_classpath()
    except java.JavaUnavailableError as error:
        print(f"\nJava comparison skipped: {error}")
        return
    print(
        f"\nOurs beside Apache Kafka {JAVA_VERSION}'s own assignors, same run "
        f"(Java: {JAVA_WARMUP} warm-up calls, median of {java_repeat}; ours: median of {repeat})\n"
    )
    print(
        "| case | epoch | ours ms | Java ms | ours / Java | balance gap ours / Java "
        "| moves ours / Java | same owner as Java | load |"
    )
    print("|---|---|---:|---:|---:|---|---|---:|---:|")
    for case in _java_cases(small):
        if only and only not in case.name:
            continue
        runs = java.run_java(
            case.java_lines(warmup=JAVA_WARMUP, repeat=java_repeat), heap="6g", timeout=1800
        )
        by_label = {run.label: run for run in runs}
        times: list[float] = []
        timed_run = functools.partial(_timed_ours, java.ours(case), repeat, times)

        previous_java: Assignment = {}
        for step, (epoch, subscriptions, previous, result) in enumerate(case.play_ours(timed_run)):
            theirs = by_label[case.label(epoch)]
            gaps = (
                java.balance_gap(result, subscriptions),
                java.balance_gap(theirs.assignment, subscriptions),
            )
            moved = (java.moves(previous, result), java.moves(previous_java, theirs.assignment))
            owner = {tp: m for m, tps in theirs.assignment.items() for tp in tps}
            same = sum(1 for m, tps in result.items() for tp in tps if owner.get(tp) == m)
            ours_ms = times[step]
            print(
                f"| {case.name} | {epoch.label} | {ours_ms:,.1f} | {theirs.median_ms:,.1f} "
                f"| {ours_ms / theirs.median_ms:.2f}x | {gaps[0]} / {gaps[1]} "
                f"| {moved[0]:,} / {moved[1]:,} | {same:,} | {os.getloadavg()[0]:.1f} |",
                flush=True,
            )
            previous_java = theirs.assignment


def memory_child(name: str, members: int, topics: int, per_topic: int, case: str) -> None:
    """Print the peak RSS (MiB) of one assignment in this process, and the RSS before it.

    The inputs (and, for a leave, the previous assignment) are built first; the kernel's peak
    RSS mark is then reset (``/proc/self/clear_refs``) so the peak is that of the call.
    """
    group = Large(members, topics, per_topic)
    frozen = name.startswith("before:")
    assignor = legacy.ASSIGNORS[name.removeprefix("before:")] if frozen else assignors.get(name)
    spec = group.spec(group.ids)
    if case == "leave":
        fresh = assignor.assign(spec, group.describer)
        spec = group.spec(group.ids[:-1], {m: fresh[m] for m in group.ids[:-1]})
        del fresh
    gc.collect()
    before = _rss_mib("VmRSS")
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    result = assignor.assign(spec, group.describer)
    peak = _rss_mib("VmHWM")
    print(f"{peak:.0f} {before:.0f} {len(result)}")


def _rss_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scenario_memory() -> None:
    print("\nPeak memory of one assignment (a child process per row; RSS, MiB)\n")
    print("| assignor | group | case | peak RSS in the call | RSS before it | before the rewrite |")
    print("|---|---|---|---:|---:|---:|")
    for name, members, topics, per_topic, case in (
        ("uniform", 10_000, 100, 10_000, "fresh"),
        ("uniform", 10_000, 100, 10_000, "leave"),
        ("sticky", 10_000, 100, 10_000, "leave"),
        ("cooperative-sticky", 2_000, 500, 2_000, "fresh"),
        ("range", 10_000, 100, 10_000, "fresh"),
    ):
        figures = []
        for which in (name, f"before:{name}"):
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--memory-child",
                    which,
                    str(members),
                    str(topics),
                    str(per_topic),
                    case,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            figures.append(done.stdout.split())
        (peak, before, _), (old_peak, old_before, _) = figures
        print(
            f"| {name} | {members:,} x {topics * per_topic:,} | {case} | {peak} | {before} "
            f"| {old_peak} (RSS before it {old_before}) |",
            flush=True,
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
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="scenario A only")
    parser.add_argument("--only", default="J", help="scenarios to run, e.g. CDJ")
    parser.add_argument("--small", action="store_true", help="J: a tenth of each size")
    parser.add_argument("--case", help="J: only the cases whose name contains this")
    parser.add_argument(
        "--java-repeat", type=int, default=JAVA_REPEAT, help="J: Java's timed calls"
    )
    parser.add_argument("--memory-child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        name, members, topics, per_topic, case = args.memory_child
        memory_child(name, int(members), int(topics), int(per_topic), case)
        return
    only = "A" if args.quick else args.only.upper()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f} at start")
    print(JAVA_SOURCE)
    if "A" in only:
        scenario_small("A", Group(100, 10, 100), args.repeat, args.repeat)
    if "B" in only:
        scenario_small("B", Group(1000, 1, 10_000), args.repeat, 1)
    if "C" in only:
        coop = {"fresh": 320, "emptied": 1_700}
        scenario_large("cooperative-sticky", Large(2_000, 500, 2_000), args.repeat, coop, True)
        scenario_large("cooperative-sticky", Large(2_000, 100, 10_000), args.repeat, coop)
    if "D" in only:
        uniform = {"fresh": 44, "join": 35}
        scenario_large("uniform", Large(10_000, 100, 10_000), args.repeat, uniform)
    if "E" in only:
        scenario_uniform_public(Large(10_000, 100, 10_000), args.repeat)
        scenario_uniform_epochs(Large(10_000, 100, 10_000), args.repeat)
    if "F" in only:
        scenario_large("sticky", Large(10_000, 100, 10_000), args.repeat, {})
    if "G" in only:
        scenario_range(args.repeat)
    if "M" in only:
        scenario_memory()
    if "J" in only:
        scenario_java(args.repeat, args.small, args.case, args.java_repeat)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
