"""Range (with KIP-881 racks) and RoundRobin: worked examples, kafka-python equality and bugs."""

from __future__ import annotations

import pytest
from assignor_checks import assert_valid, groups
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_python_peer import (
    FakeCluster,
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
    flatten,
    members,
)

import assignors

PROPERTY = settings(max_examples=150, deadline=None)


def test_range_contiguous_ranges_first_members_take_the_extra() -> None:
    result = assignors.assign("range", {"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 7})
    assert result == {
        "a": [("t", 0), ("t", 1), ("t", 2)],
        "b": [("t", 3), ("t", 4)],
        "c": [("t", 5), ("t", 6)],
    }


def test_range_co_partitions_equal_topics() -> None:
    subs = {"a": ["t0", "t1"], "b": ["t0", "t1"]}
    result = assignors.assign("range", subs, {"t0": 3, "t1": 3})
    assert result == {
        "a": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)],
        "b": [("t0", 2), ("t1", 2)],
    }


def test_range_static_members_sort_first_by_instance_id() -> None:
    subs = {"a": ["t"], "b": ["t"], "c": ["t"]}
    result = assignors.assign("range", subs, {"t": 6}, instance_ids={"a": "zz", "c": "ic"})
    assert result == {
        "c": [("t", 0), ("t", 1)],
        "a": [("t", 2), ("t", 3)],
        "b": [("t", 4), ("t", 5)],
    }


def test_kafka_python_range_drops_interleaved_static_members_ours_does_not() -> None:
    """kafka-python groups static/dynamic members with groupby on unsorted input (its bug)."""
    subs = {"a": ["t"], "b": ["t"], "c": ["t"]}
    instance_ids = {"a": "ia", "c": "ic"}
    theirs = flatten(
        RangePartitionAssignor.assign(FakeCluster({"t": 6}), members(subs, instance_ids))
    )
    assert theirs["a"] == []  # a static member left with nothing
    ours = assignors.assign("range", subs, {"t": 6}, instance_ids=instance_ids)
    assert ours == {"a": [("t", 0), ("t", 1)], "c": [("t", 2), ("t", 3)], "b": [("t", 4), ("t", 5)]}


RACKS3 = {"a": "r0", "b": "r1", "c": "r2"}


def test_range_rack_aware_co_partitioned_topics_follow_racks() -> None:
    racks = {(t, p): [f"r{(p + 1) % 3}"] for t in ("t1", "t2") for p in range(3)}
    subs = {m: ["t1", "t2"] for m in RACKS3}
    result = assignors.assign(
        "range", subs, {"t1": 3, "t2": 3}, member_racks=RACKS3, partition_racks=racks
    )
    assert result == {
        "a": [("t1", 2), ("t2", 2)],
        "b": [("t1", 0), ("t2", 0)],
        "c": [("t1", 1), ("t2", 1)],
    }


def test_range_rack_aware_single_topic() -> None:
    racks = {("t", 0): ["r1"], ("t", 1): ["r0"], ("t", 2): ["r1"], ("t", 3): ["r0"]}
    result = assignors.assign(
        "range",
        {"a": ["t"], "b": ["t"]},
        {"t": 4},
        member_racks={"a": "r0", "b": "r1"},
        partition_racks=racks,
    )
    assert result == {"a": [("t", 1), ("t", 3)], "b": [("t", 0), ("t", 2)]}


def test_range_prefers_co_partitioning_over_rack_alignment() -> None:
    racks = {("t1", 0): ["r0"], ("t2", 0): ["r1"], ("t1", 1): ["r1"], ("t2", 1): ["r0"]}
    result = assignors.assign(
        "range",
        {"a": ["t1", "t2"], "b": ["t1", "t2"]},
        {"t1": 2, "t2": 2},
        member_racks={"a": "r0", "b": "r1"},
        partition_racks=racks,
    )
    assert result == {"a": [("t1", 0), ("t2", 0)], "b": [("t1", 1), ("t2", 1)]}


def test_range_ignores_racks_when_every_partition_is_on_every_rack() -> None:
    racks = {("t", p): ["r0", "r1"] for p in range(4)}
    result = assignors.assign(
        "range",
        {"a": ["t"], "b": ["t"]},
        {"t": 4},
        member_racks={"a": "r1", "b": "r0"},
        partition_racks=racks,
    )
    assert result == assignors.assign("range", {"a": ["t"], "b": ["t"]}, {"t": 4})


def test_roundrobin_javadoc_example_unequal_subscriptions() -> None:
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    result = assignors.assign("roundrobin", subs, {"t0": 1, "t1": 2, "t2": 3})
    assert result == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }


def test_kafka_python_roundrobin_raises_on_mixed_subscriptions_ours_assigns() -> None:
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    parts = {"t0": 1, "t1": 2, "t2": 3}
    with pytest.raises(KeyError):
        RoundRobinPartitionAssignor.assign(FakeCluster(parts), members(subs))
    assert_valid(assignors.assign("roundrobin", subs, parts), subs, parts)


member_names = st.lists(
    st.text("abcxyz019-", min_size=1, max_size=6), min_size=1, max_size=8, unique=True
)


@PROPERTY
@given(
    names=member_names,
    topics=st.sets(st.sampled_from(["t0", "t1", "t2"]), min_size=1),
    counts=st.lists(st.integers(0, 12), min_size=3, max_size=3),
)
def test_equal_subscriptions_match_kafka_python(names, topics, counts) -> None:  # type: ignore[no-untyped-def]
    subs = {m: sorted(topics) for m in names}
    parts = dict(zip(["t0", "t1", "t2"], counts, strict=True))
    cluster = FakeCluster(parts)
    for name, peer in (
        ("range", RangePartitionAssignor),
        ("roundrobin", RoundRobinPartitionAssignor),
    ):
        assert assignors.assign(name, subs, parts) == flatten(peer.assign(cluster, members(subs)))


@PROPERTY
@given(group=groups(), name=st.sampled_from(["range", "roundrobin", "zookeeper-range"]))
def test_non_sticky_assignors_are_valid(group, name) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, racks, replica_racks = group
    result = assignors.assign(
        name, subscriptions, partitions, member_racks=racks, partition_racks=replica_racks
    )
    assert_valid(result, subscriptions, partitions)


@PROPERTY
@given(group=groups(equal_subscriptions=True))
def test_range_keeps_per_topic_quotas_with_racks(group) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, racks, replica_racks = group
    result = assignors.assign(
        "range", subscriptions, partitions, member_racks=racks, partition_racks=replica_racks
    )
    for topic in next(iter(subscriptions.values())):
        per_member = [sum(1 for t, _ in tps if t == topic) for tps in result.values()]
        assert max(per_member) - min(per_member) <= 1


@PROPERTY
@given(group=groups(equal_subscriptions=True, with_racks=False))
def test_roundrobin_equal_subscriptions_balanced(group) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, _, _ = group
    sizes = [len(v) for v in assignors.assign("roundrobin", subscriptions, partitions).values()]
    assert max(sizes) - min(sizes) <= 1
