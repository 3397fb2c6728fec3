"""Uniform (KIP-848), the seed designs' allocators, and the registry."""

from __future__ import annotations

from typing import Any

import pytest
from assignor_checks import assert_balanced, assert_valid, groups
from hypothesis import given, settings
from hypothesis import strategies as st

import assignors
from assignors import registry
from assignors.seeds import java_string_hash, tubemq_node_for, tubemq_partition_key
from assignors.spec import GroupSpec, StaticTopics

PROPERTY = settings(max_examples=150, deadline=None)


def test_uniform_heterogeneous_spec_vector_is_balanced() -> None:
    subs = {"A": ["t1", "t3"], "B": ["t3"]}
    result = assignors.assign("uniform", subs, {"t1": 3, "t3": 6})
    assert {("t1", 0), ("t1", 1), ("t1", 2)} <= set(result["A"])
    assert sorted([len(result["A"]), len(result["B"])]) == [4, 5]
    assert_balanced(result, subs)


def test_uniform_keeps_an_already_balanced_assignment() -> None:
    """Kafka's homogeneous uniform builder (before KAFKA-18688) moved a partition here."""
    owned = {"A": [("t", 0)], "B": [("t", 1)], "C": [("t", 2), ("t", 3)]}
    result = assignors.assign("uniform", {m: ["t"] for m in owned}, {"t": 4}, owned=owned)
    assert result == owned


@PROPERTY
@given(group=groups(with_racks=False), name=st.sampled_from(["uniform", "sticky"]))
def test_rerunning_on_the_result_changes_nothing(group, name) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, _, _ = group
    first = assignors.assign(name, subscriptions, partitions)
    assert assignors.assign(name, subscriptions, partitions, owned=first) == first


def test_zookeeper_range_sorts_thread_ids_as_strings() -> None:
    result = assignors.assign("zookeeper-range", {"c-2": ["t"], "c-10": ["t"]}, {"t": 3})
    assert result == {"c-10": [("t", 0), ("t", 1)], "c-2": [("t", 2)]}
    # today's range orders the same way for dynamic members, but static ids come first
    modern = assignors.assign(
        "range", {"c-2": ["t"], "c-10": ["t"]}, {"t": 3}, instance_ids={"c-2": "i"}
    )
    assert modern == {"c-2": [("t", 0), ("t", 1)], "c-10": [("t", 2)]}


def test_zookeeper_range_with_several_streams_per_consumer() -> None:
    allocator = assignors.seeds.ZooKeeperRangeAssignor(streams={"c1": 2})
    spec = assignors.group_spec({"c1": ["t"], "c2": ["t"]})
    result = allocator.assign(spec, StaticTopics({"t": 5}))
    # threads c1-0, c1-1, c2: 5 partitions -> [0, 1], [2, 3], [4]
    assert result == {"c1": [("t", 0), ("t", 1), ("t", 2), ("t", 3)], "c2": [("t", 4)]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("hello", 99162322), ("Aa", 2112), ("BB", 2112), ("polygenelubricants", 2**31)],
)
def test_java_string_hash_known_values(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_java_string_hash_uses_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00: 31 * 0xD83D + 0xDE00
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00


def test_tubemq_modulo_assigns_by_partition_key_hash() -> None:
    subs = {"n0": ["t"], "n1": ["t"], "n2": ["t"]}
    brokers = {("t", p): 100 + p % 2 for p in range(8)}
    result = assignors.assign("tubemq-modulo", subs, {"t": 8}, partition_brokers=brokers)
    assert_valid(result, subs, {"t": 8})
    nodes = ["n0", "n1", "n2"]
    for p in range(8):
        key = tubemq_partition_key(100 + p % 2, "t", p)
        assert ("t", p) in result[nodes[java_string_hash(key) % 3]]
    assert tubemq_node_for("1:t:0", 1) == 0


def test_tubemq_modulo_refuses_unequal_subscriptions_and_unknown_brokers() -> None:
    with pytest.raises(assignors.AssignmentError):
        assignors.assign(
            "tubemq-modulo", {"a": ["t"], "b": []}, {"t": 1}, partition_brokers={("t", 0): 1}
        )
    with pytest.raises(assignors.AssignmentError):
        assignors.assign("tubemq-modulo", {"a": ["t"]}, {"t": 1})


def test_registry_lists_the_builtins() -> None:
    assert {
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
        "uniform",
        "zookeeper-range",
        "tubemq-modulo",
    } <= set(assignors.names())


def test_unknown_assignor_is_a_clear_error() -> None:
    with pytest.raises(assignors.UnknownAssignorError, match="no-such"):
        assignors.get("no-such")


class _Everything:
    """A user-defined assignor: everything to the first member in member order."""

    def __init__(self, name: str = "everything-to-first") -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def assign(self, spec: GroupSpec, topics: Any) -> dict[str, list[tuple[str, int]]]:
        order = spec.ordered_member_ids()
        result: dict[str, list[tuple[str, int]]] = {m: [] for m in spec.members}
        for topic in assignors.spec.subscribed_topics(spec, topics):
            result[order[0]].extend((topic, p) for p in range(topics.partition_count(topic) or 0))
        return result


def test_user_defined_assignor_registration() -> None:
    reg = registry.Registry()
    reg.register(_Everything())
    assert reg.get("everything-to-first").name == "everything-to-first"
    with pytest.raises(ValueError, match="already registered"):
        reg.register(_Everything())
    reg.register(_Everything(), replace=True)


def test_entry_points_are_loaded_on_a_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    class _EntryPoint:
        name = "everything-to-first"

        def load(self) -> type[_Everything]:
            return _Everything

    def fake_entry_points(group: str) -> list[_EntryPoint]:
        assert group == registry.ENTRY_POINT_GROUP
        return [_EntryPoint()]

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    reg = registry.Registry()
    spec = assignors.group_spec({"b": ["t"], "a": ["t"]})
    assert reg.get("everything-to-first").assign(spec, StaticTopics({"t": 2})) == {
        "a": [("t", 0), ("t", 1)],
        "b": [],
    }


@pytest.mark.parametrize("per_member", [1, 400])  # the list path, and the numpy quota path
def test_uniform_gives_the_spare_quotas_to_the_last_members_as_kafka_4_4(per_member: int) -> None:
    """Kafka 4.4's homogeneous builder: a member over the minimum keeps its extra partition; a
    member at or under it gives its extra up while enough members follow it, so the extras
    left go to the last members in member order (seen against Kafka in the KIP-848 lockstep:
    two members with nothing, one partition free)."""
    count = 3 * per_member + 2  # minimum `per_member`, two extras
    owned = {"A": [("t", p) for p in range(per_member + 1)], "B": [], "C": []}
    result = assignors.assign("uniform", {m: ["t"] for m in owned}, {"t": count}, owned=owned)
    assert [len(result[m]) for m in "ABC"] == [per_member + 1, per_member, per_member + 1]
    assert set(owned["A"]) <= set(result["A"])
