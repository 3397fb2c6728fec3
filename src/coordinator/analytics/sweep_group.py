"""One sweep scenario as a group that changes over time, and the metrics of an assignment.

Everything here is rebuilt from the scenario tuple alone (its seed included), so any executor
builds the same group without shipping it: subscriptions, member racks and replica racks.

Racks (scenario `racks` = N > 0): member i (in creation order, joiners continuing the count) is
on rack `r{i % N}`; every partition has min(2, N - 1) replicas (at least 1) on distinct racks
drawn from the seed, so with N >= 2 no partition is on every rack and KIP-881's rack-aware
assignors have something to do. The replica draw has its own random stream: the same seed gives
the same subscriptions with or without racks, so rows differing only in `racks` compare fairly.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from assignors import TopicPartition

Scenario = tuple[int, int, int, str, int, int]
"""(members, topics, partitions per topic, subscription kind, racks, seed)."""

SCENARIO_COLUMNS = ["members", "topics", "partitions_per_topic", "subscriptions", "racks", "seed"]

Assignment = dict[str, list[TopicPartition]]


@dataclass
class Group:
    """The group of one scenario: who subscribes to what, where members and replicas live."""

    subscriptions: dict[str, list[str]]
    partitions: dict[str, int]
    rack_count: int
    replica_racks: dict[TopicPartition, frozenset[str]]
    template: list[str] = field(default_factory=list)
    member_racks: dict[str, str] = field(default_factory=dict)
    created: int = 0

    def add(self, member: str, topics: list[str]) -> None:
        """A member joins (`template`'s topics when churn adds it); it gets the next rack."""
        self.subscriptions[member] = topics
        if self.rack_count:
            self.member_racks[member] = f"r{self.created % self.rack_count}"
        self.created += 1

    def remove(self, member: str) -> None:
        del self.subscriptions[member]
        self.member_racks.pop(member, None)

    def subscribed_partitions(self) -> int:
        topics = {t for ts in self.subscriptions.values() for t in ts}
        return sum(self.partitions[t] for t in topics)


def _replica_racks(
    names: list[str], per_topic: int, racks: int, seed: int
) -> dict[TopicPartition, frozenset[str]]:
    if racks == 0:
        return {}
    rng = random.Random(f"{seed}:replica-racks")
    all_racks = [f"r{i}" for i in range(racks)]
    replicas = max(1, min(2, racks - 1))
    return {
        (t, p): frozenset(rng.sample(all_racks, replicas)) for t in names for p in range(per_topic)
    }


def build_group(scenario: Scenario) -> Group:
    """Deterministic group from the scenario alone, so any executor rebuilds the same one."""
    members, topics, per_topic, kind, racks, seed = scenario
    rng = random.Random(seed)
    names = [f"t{i}" for i in range(topics)]
    group = Group(
        {}, dict.fromkeys(names, per_topic), racks, _replica_racks(names, per_topic, racks, seed)
    )
    for m in range(members):
        if kind == "equal" or topics <= 1:  # one topic (or none) leaves nothing to mix
            group.add(f"m{m:05d}", list(names))
        else:
            group.add(f"m{m:05d}", sorted(rng.sample(names, rng.randint(1, topics))))
    group.template = list(next(iter(group.subscriptions.values()), names))
    return group


def owners(assignment: Assignment) -> dict[TopicPartition, str]:
    return {tp: m for m, tps in assignment.items() for tp in tps}


def assigned_count(assignment: Assignment) -> int:
    return sum(len(tps) for tps in assignment.values())


def is_valid(
    assignment: Assignment, subs: dict[str, list[str]], partitions: dict[str, int]
) -> bool:
    """Every subscribed partition assigned exactly once, and only to a subscriber."""
    seen = [tp for tps in assignment.values() for tp in tps]
    wanted = {(t, p) for t in {t for ts in subs.values() for t in ts} for p in range(partitions[t])}
    if len(seen) != len(set(seen)) or set(seen) != wanted:
        return False
    return all(m in subs and t in subs[m] for m, tps in assignment.items() for t, _ in tps)


def balance(assignment: Assignment, subs: dict[str, list[str]]) -> int:
    """Max-min partition count among members with the same subscription, worst over the classes."""
    classes: dict[tuple[str, ...], list[int]] = {}
    for m in subs:
        classes.setdefault(tuple(subs[m]), []).append(len(assignment.get(m, [])))
    return max((max(c) - min(c) for c in classes.values()), default=0)


def moved(before: Assignment, after: Assignment) -> int:
    """Partitions that had an owner before and have a different one after."""
    previous = owners(before)
    return sum(1 for tp, m in owners(after).items() if tp in previous and previous[tp] != m)


def rack_locality(
    assignment: Assignment,
    member_racks: dict[str, str],
    replica_racks: dict[TopicPartition, frozenset[str]],
) -> float | None:
    """Fraction of assigned partitions whose owner's rack holds a replica; None without racks.

    The complement of Kafka's `numPartitionsWithRackMismatch` over the partitions assigned.
    """
    if not member_racks:
        return None
    pairs = [(m, tp) for m, tps in assignment.items() for tp in tps]
    if not pairs:
        return None
    local = sum(1 for m, tp in pairs if member_racks.get(m) in replica_racks.get(tp, ()))
    return local / len(pairs)


def cooperative_safe(owned: Assignment, result: Assignment) -> bool:
    """KIP-429: no partition goes to a member while another member of the group still owns it."""
    current = owners(owned)
    return all(current.get(tp, m) == m for m, tps in result.items() for tp in tps)


def digest(assignment: Assignment) -> str:
    """Short fingerprint of who owns what (members without partitions do not count).

    Lets two rows be compared for identical assignments without storing the assignments.
    """
    canonical = repr(sorted(owners(assignment).items()))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
