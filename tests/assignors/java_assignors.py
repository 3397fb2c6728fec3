"""Apache Kafka's own assignors as a peer: the Java harness, fed the specs our assignors get.

`scripts/ensure-java-assignors` builds `benchmarks/java/AssignorHarness.java` against
kafka-clients and kafka-group-coordinator from Maven Central; `run_java` runs one harness script
(a `Script`: topics, members, what they own, and the epochs to run) in one JVM and returns each
run's median time and assignment. `Case` is one comparison (an assignor, its epochs) that the
benchmark and the comparison test play on both sides, each side starting every epoch from its own
previous result; `balance_gap` and `moves` are the figures compared.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import assignors

CHECKOUT = Path(__file__).resolve().parents[2]
ENSURE = CHECKOUT / "scripts" / "ensure-java-assignors"

Assignment = dict[str, list[tuple[str, int]]]

#: Our assignor name -> the harness's name for Java's.
JAVA_NAMES = {
    "range": "range",
    "roundrobin": "roundrobin",
    "sticky": "sticky",
    "cooperative-sticky": "cooperative-sticky",
    "uniform": "server-uniform",
    "server-range": "server-range",
}


class JavaUnavailableError(RuntimeError):
    """No JDK or Maven here (or the build failed): the harness cannot run."""


def harness_classpath() -> str:
    """Build the harness if needed (`scripts/ensure-java-assignors`) and return its classpath."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        raise JavaUnavailableError("no JDK on PATH")
    done = subprocess.run([str(ENSURE)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise JavaUnavailableError(done.stderr.strip().splitlines()[-1:] or "build failed")
    return done.stdout.strip().splitlines()[-1]


def _topics_word(topics: Iterable[str]) -> str:
    return ",".join(topics) or "-"


def _pairs_word(pairs: Iterable[tuple[str, int]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    if not by_topic:
        return "-"
    return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))


def parse_pairs(word: str) -> list[tuple[str, int]]:
    if word == "-":
        return []
    pairs: list[tuple[str, int]] = []
    for part in word.split(";"):
        topic, _, numbers = part.partition(":")
        pairs += ((topic, int(p)) for p in numbers.split(","))
    return pairs


@dataclass
class Epoch:
    """One change to the group before a run (none for the first)."""

    label: str
    joins: Mapping[str, Sequence[str]] = field(default_factory=dict)
    leaves: Sequence[str] = ()
    subscribes: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass
class Case:
    """An assignor over a group, epoch after epoch, each from the previous epoch's result."""

    name: str
    assignor: str
    partitions: Mapping[str, int]
    members: Mapping[str, Sequence[str]]
    epochs: Sequence[Epoch]

    def java_lines(self, *, warmup: int, repeat: int, print_all: bool = True) -> list[str]:
        lines = ["reset", f"assignor {JAVA_NAMES[self.assignor]}", f"timing {warmup} {repeat}"]
        lines += [f"topic {t} {n}" for t, n in self.partitions.items()]
        lines += [f"member {m} {_topics_word(ts)}" for m, ts in self.members.items()]
        for epoch in self.epochs:
            lines += [f"member {m} {_topics_word(ts)}" for m, ts in epoch.joins.items()]
            lines += [f"leave {m}" for m in epoch.leaves]
            lines += [f"subscribe {m} {_topics_word(ts)}" for m, ts in epoch.subscribes.items()]
            lines.append(f"run {self.label(epoch)}{' print' if print_all else ''}")
        return lines

    def label(self, epoch: Epoch) -> str:
        """The epoch's run label in the harness's output (one word)."""
        return f"{self.name}/{epoch.label}".replace(" ", "_")

    def play_ours(
        self, run: Callable[[Mapping[str, Sequence[str]], Assignment], Assignment]
    ) -> list[tuple[Epoch, Mapping[str, Sequence[str]], Assignment, Assignment]]:
        """Each epoch's (epoch, subscriptions, previous result, result), ``run`` computing it."""
        subscriptions = dict(self.members)
        previous: Assignment = {}
        played = []
        for epoch in self.epochs:
            subscriptions.update(epoch.joins)
            for m in epoch.leaves:
                subscriptions.pop(m)
            subscriptions.update(epoch.subscribes)
            owned = {m: previous[m] for m in subscriptions if m in previous}
            result = run(dict(subscriptions), owned)
            played.append((epoch, dict(subscriptions), previous, result))
            previous = result
        return played


def ours(case: Case) -> Callable[[Mapping[str, Sequence[str]], Assignment], Assignment]:
    """Our assignor through `assignors.assign` (owned partitions from the previous epoch)."""
    name = "range" if case.assignor == "server-range" else case.assignor

    def run(subscriptions: Mapping[str, Sequence[str]], owned: Assignment) -> Assignment:
        generations = dict.fromkeys(owned, 1)
        return assignors.assign(
            name, subscriptions, case.partitions, owned=owned, generations=generations
        )

    return run


@dataclass
class JavaRun:
    label: str
    median_ms: float
    min_ms: float
    assignment: Assignment


def run_java(lines: Sequence[str], *, heap: str = "512m", timeout: float = 600) -> list[JavaRun]:
    """Run one harness script in one JVM; the runs in script order."""
    java = os.environ.get("JAVA", "java")
    done = subprocess.run(
        [java, f"-Xmx{heap}", "-XX:+UseParallelGC", "-cp", harness_classpath(), "AssignorHarness"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"Java assignor harness failed: {done.stderr.strip()[-2000:]}")
    runs: list[JavaRun] = []
    assigned: Assignment = {}
    timing: dict[str, tuple[float, float]] = {}
    for line in done.stdout.splitlines():
        kind, label, *rest = line.split(" ")
        if kind == "time":
            timing[label] = (float(rest[0]), float(rest[1]))
        elif kind == "assigned":
            assigned[rest[0]] = parse_pairs(rest[1])
        elif kind == "done":
            runs.append(JavaRun(label, *timing[label], assigned))
            assigned = {}
    return runs


def balance_gap(assignment: Assignment, subscriptions: Mapping[str, Iterable[str]]) -> int:
    """The worst count gap a move could narrow: over topics, the most partitions a holder of
    one of its partitions has minus the fewest any subscriber of it has (balanced: <= 1)."""
    counts = {m: len(assignment.get(m, ())) for m in subscriptions}
    holders: dict[str, set[str]] = {}
    for member, pairs in assignment.items():
        for topic, _ in pairs:
            holders.setdefault(topic, set()).add(member)
    subscribers: dict[str, list[str]] = {}
    for member, topics in subscriptions.items():
        for topic in topics:
            subscribers.setdefault(topic, []).append(member)
    gap = 0
    for topic, held_by in holders.items():
        fewest = min(counts[m] for m in subscribers.get(topic, held_by))
        gap = max(gap, max(counts[m] for m in held_by) - fewest)
    return gap


def moves(previous: Assignment, current: Assignment) -> int:
    """Partitions taken from the member that held them in ``previous`` (revoked or moved)."""
    now = {m: set(tps) for m, tps in current.items()}
    return sum(1 for m, tps in previous.items() for tp in tps if tp not in now.get(m, ()))


def unassigned(assignment: Assignment, partitions: Mapping[str, int], subscribed: set[str]) -> int:
    """Subscribed partitions nobody holds (cooperative round one withholds some)."""
    total = sum(n for t, n in partitions.items() if t in subscribed)
    return total - sum(map(len, assignment.values()))
