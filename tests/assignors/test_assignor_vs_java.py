"""Our assignors beside Apache Kafka's own, epoch by epoch: balance and moves as good as Java's.

Every assignor Kafka has a counterpart of (kafka-clients' range, roundrobin, sticky and
cooperative-sticky; group-coordinator's uniform, with equal and with unequal subscriptions, and
its range) plays the same small group through a fresh assignment, a member joining, one leaving
and one changing its subscription, each epoch starting from that side's own previous result.
Java runs in one JVM for all cases (`java_assignors.run_java`, the harness that
`scripts/ensure-java-assignors` builds from Maven Central). For each epoch our result is valid
(every subscribed partition once, to a subscriber; cooperative round one may withhold), its
balance gap is no wider than Java's, and it takes no more partitions from their holders.
"""

from __future__ import annotations

import pytest
from java_assignors import (
    Case,
    Epoch,
    JavaRun,
    JavaUnavailableError,
    balance_gap,
    harness_classpath,
    moves,
    ours,
    run_java,
)

pytestmark = pytest.mark.xdist_group("java_assignors")

PARTITIONS = {"alpha": 7, "beta": 5, "gamma": 4, "delta": 9}
EVERYTHING = sorted(PARTITIONS)
MEMBERS = [f"member-{i}" for i in range(6)]
UNEQUAL = {
    "member-0": ["alpha"],
    "member-1": ["alpha", "beta"],
    "member-2": ["beta", "gamma", "delta"],
    "member-3": EVERYTHING,
    "member-4": ["delta"],
    "member-5": ["alpha", "delta"],
}


def _epochs(change_to: list[str]) -> list[Epoch]:
    return [
        Epoch("fresh"),
        Epoch("join", joins={"member-9": EVERYTHING}),
        Epoch("leave", leaves=["member-1"]),
        Epoch("subscribe", subscribes={"member-2": change_to}),
    ]


def _cases() -> list[Case]:
    equal = dict.fromkeys(MEMBERS, EVERYTHING)
    cases = [
        Case(f"{name}-equal", name, PARTITIONS, equal, _epochs(["alpha", "beta"]))
        for name in ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform")
    ]
    cases.append(Case("uniform-unequal", "uniform", PARTITIONS, UNEQUAL, _epochs(["gamma"])))
    cases.append(Case("sticky-unequal", "sticky", PARTITIONS, UNEQUAL, _epochs(["gamma"])))
    cases.append(Case("server-range-equal", "server-range", PARTITIONS, equal, _epochs(["beta"])))
    cases.append(
        Case("server-range-unequal", "server-range", PARTITIONS, UNEQUAL, _epochs(["gamma"]))
    )
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def java_runs() -> dict[str, JavaRun]:
    try:
        harness_classpath()
    except JavaUnavailableError as error:
        pytest.skip(f"Kafka's assignors cannot run here: {error}")
    lines = [line for case in CASES for line in case.java_lines(warmup=0, repeat=1)]
    return {run.label: run for run in run_java(lines)}


def _assert_valid(result: dict[str, list[tuple[str, int]]], subscriptions: dict[str, list[str]],
                  *, withholds: bool) -> None:  # fmt: skip
    held = [tp for tps in result.values() for tp in tps]
    assert len(held) == len(set(held)), "a partition assigned twice"
    for member, tps in result.items():
        assert all(topic in subscriptions[member] for topic, _ in tps)
    subscribed = {(t, p) for ts in subscriptions.values() for t in ts for p in range(PARTITIONS[t])}
    assert set(held) <= subscribed
    if not withholds:
        assert set(held) == subscribed


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_balance_and_moves_are_as_good_as_javas(case: Case, java_runs: dict[str, JavaRun]) -> None:
    previous_java: dict[str, list[tuple[str, int]]] = {}
    for epoch, subscriptions, previous, result in case.play_ours(ours(case)):
        java = java_runs[case.label(epoch)]
        assert set(java.assignment) == set(subscriptions)
        _assert_valid(result, dict(subscriptions), withholds=case.assignor == "cooperative-sticky")
        assert balance_gap(result, subscriptions) <= balance_gap(java.assignment, subscriptions), (
            epoch.label, result, java.assignment)  # fmt: skip
        assert moves(previous, result) <= moves(previous_java, java.assignment), (
            epoch.label, result, java.assignment)  # fmt: skip
        previous_java = java.assignment
