"""Each consumer's ownership decision equals 0.8's formula, remainder included."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignors import AssignmentError
from rebalance.zookeeper.assignment import GroupView, ownership_decision
from rebalance.zookeeper.ids import java_order, threads_per_topic


def range_by_formula(partitions: list[int], threads: list[str]) -> dict[int, str]:
    """ZookeeperConsumerConnector 0.8: nPer = P / C, nExtra = P % C,
    start = nPer * i + min(i, nExtra), n = nPer + (i < nExtra ? 1 : 0)."""
    per, extra = divmod(len(partitions), len(threads))
    owners = {}
    for i, thread in enumerate(java_order(threads)):
        start = per * i + min(i, extra)
        for k in range(start, start + per + (1 if i < extra else 0)):
            owners[sorted(partitions)[k]] = thread
    return owners


def test_the_documented_example_two_consumers_two_streams_five_partitions() -> None:
    view = GroupView({"C1": {"t": 2}, "C2": {"t": 2}}, {"t": [0, 1, 2, 3, 4]})
    decided = {**ownership_decision("range", "C1", view), **ownership_decision("range", "C2", view)}
    assert decided == {
        ("t", 0): "C1-0", ("t", 1): "C1-0", ("t", 2): "C1-1", ("t", 3): "C2-0", ("t", 4): "C2-1"
    }  # fmt: skip


@given(
    streams=st.lists(st.integers(1, 3), min_size=1, max_size=6),
    partitions=st.sets(st.integers(0, 40), min_size=0, max_size=25),
)
def test_range_equals_the_0_8_formula_and_splits_without_overlap(
    streams: list[int], partitions: set[int]
) -> None:
    consumers = {f"g_c{i}": {"t": n} for i, n in enumerate(streams)}
    view = GroupView(consumers, {"t": sorted(partitions)})
    threads = [t for c, counts in consumers.items() for t in threads_per_topic(c, counts)["t"]]
    expected = range_by_formula(sorted(partitions), threads)
    decided: dict[int, str] = {}
    for consumer in consumers:
        for (topic, partition), thread in ownership_decision("range", consumer, view).items():
            assert topic == "t" and partition not in decided
            decided[partition] = thread
    assert decided == expected


def test_a_consumer_only_claims_its_own_topics() -> None:
    view = GroupView({"a": {"x": 1}, "b": {"x": 1, "y": 1}}, {"x": [0, 1], "y": [0, 1]})
    assert ownership_decision("range", "a", view) == {("x", 0): "a-0"}
    assert ownership_decision("range", "b", view) == {
        ("x", 1): "b-0", ("y", 0): "b-0", ("y", 1): "b-0"
    }  # fmt: skip


def test_roundrobin_deals_in_hash_code_order_over_sorted_threads() -> None:
    view = GroupView({"a": {"t": 1}, "b": {"t": 1}}, {"t": list(range(6))})
    a, b = ownership_decision("roundrobin", "a", view), ownership_decision("roundrobin", "b", view)
    assert set(a).isdisjoint(b) and len(a) == len(b) == 3
    # "[t,0]".hashCode < "[t,1]".hashCode < ...: consecutive strings, increasing hashes here.
    assert sorted(p for _, p in a) == [0, 2, 4]


@pytest.mark.parametrize(
    "subscriptions",
    [
        {"a": {"t": 1, "u": 1}, "b": {"t": 1}},  # different topics
        {"a": {"t": 2, "u": 1}, "b": {"t": 2, "u": 1}},  # stream counts differ across topics
    ],
)
def test_roundrobin_needs_identical_subscriptions(subscriptions: dict[str, dict[str, int]]) -> None:
    view = GroupView(subscriptions, {"t": [0, 1], "u": [0]})
    with pytest.raises(AssignmentError, match="Round-robin assignment is allowed only"):
        ownership_decision("roundrobin", "a", view)


def test_roundrobin_allows_several_streams_when_counts_agree() -> None:
    view = GroupView({"a": {"t": 2}, "b": {"t": 1}}, {"t": list(range(6))})
    owned = ownership_decision("roundrobin", "a", view)
    assert set(owned.values()) == {"a-0", "a-1"} and len(owned) == 4
