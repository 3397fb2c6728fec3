"""benchmarks/bench_vs_kafka.py at tiny sizes against our server and Kafka's broker, so the
side-by-side benchmark keeps running: every measure gets a figure from both sides, each
workload's answers checked by the benchmark itself (errors, one generation, a converged group
described as Stable). Speed is not asserted here."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.testing.peers.pytest_plugin import KafkaBrokers

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS.parent / "benchmarks"))
sys.path.insert(0, str(TESTS / "coordinator"))
from kafka_peer_settings import BATCHED  # noqa: E402

from bench_vs_kafka import Figures, Sizes, memory_growth, run_workloads, table  # noqa: E402
from bench_vs_kafka_sides import KafkaSide, OursSide, Side  # noqa: E402

#: The conformance tests' broker with an initial delay (a classic group of a few joins sent at
#: once forms in one generation), shared with them in a suite run; groups of at most 3.
SMOKE_SETTINGS = BATCHED
TINY = Sizes(
    repeat=1, seconds=0.2, members=3, rounds=1, consumers=(3,), heartbeat_shapes=((3, 1), (3, 2)),
    heartbeat_group_size=3, commit_writers=3, commit_offsets=2, memory_groups=1,
    memory_per_group=2, memory_settle_s=0.1, live_heap=False, settle_s=0.05,
)  # fmt: skip


@pytest.fixture
def sides(kafka_brokers: KafkaBrokers) -> Iterator[list[Side]]:
    ours = OursSide(SMOKE_SETTINGS)
    try:
        yield [ours, KafkaSide(broker=kafka_brokers.get(SMOKE_SETTINGS))]
    finally:
        ours.stop()


def test_every_workload_runs_against_both_and_gives_each_a_figure(sides: list[Side]) -> None:
    figures = Figures()
    run_workloads(sides, TINY, figures)
    for measure, by_side in figures.values.items():
        assert {"ours", "kafka"} <= set(by_side), measure
        assert all(v >= 0 for values in by_side.values() for v in values), measure
    assert "kafka fsync" in figures.values["durable offsets/s"]
    assert any(m.startswith("KIP-848 3 + 1 joins") for m in figures.values)
    assert "| durable offsets/s, Kafka flush.messages=1 |" in table(figures)


def test_memory_growth_is_read_on_both(sides: list[Side]) -> None:
    figures = Figures()
    for side in sides:
        asyncio.run(memory_growth(side, TINY, figures))
    assert set(figures.values) == {"bytes per idle group (RSS)", "bytes per member (RSS)"}
    assert all(set(by_side) == {"ours", "kafka"} for by_side in figures.values.values())
