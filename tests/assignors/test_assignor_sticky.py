"""Sticky and cooperative-sticky: KIP-54/KIP-429 worked examples, ownership rules, properties."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from assignor_checks import (
    all_partitions,
    assert_balanced,
    assert_valid,
    groups,
    max_keepable,
    moved,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assignors
from assignors import sticky
from assignors.balance import BalanceOutcome
from coordinator.analytics.sweep_group import build_group

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FOUR_TOPICS = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
ALL4 = ["t0", "t1", "t2", "t3"]


def test_kip54_example_one_fresh_matches_round_robin_layout() -> None:
    result = assignors.assign("sticky", {"C0": ALL4, "C1": ALL4, "C2": ALL4}, FOUR_TOPICS)
    assert result == {
        "C0": [("t0", 0), ("t1", 1), ("t3", 0)],
        "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
        "C2": [("t1", 0), ("t2", 1)],
    }


def test_kip54_example_one_member_leaves_only_its_partitions_move() -> None:
    before = {
        "C0": [("t0", 0), ("t1", 1), ("t3", 0)],
        "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
        "C2": [("t1", 0), ("t2", 1)],
    }
    after = assignors.assign(
        "sticky",
        {"C0": ALL4, "C2": ALL4},
        FOUR_TOPICS,
        owned={"C0": before["C0"], "C2": before["C2"]},
    )
    assert set(before["C0"]) <= set(after["C0"])
    assert set(before["C2"]) <= set(after["C2"])
    assert moved(before, after) == 3
    assert [len(after["C0"]), len(after["C2"])] == [4, 4]


KIP54_UNEQUAL = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
KIP54_UNEQUAL_PARTITIONS = {"t0": 1, "t1": 2, "t2": 3}


def test_kip54_example_two_unequal_subscriptions() -> None:
    result = assignors.assign("sticky", KIP54_UNEQUAL, KIP54_UNEQUAL_PARTITIONS)
    assert result == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0), ("t1", 1)],
        "C2": [("t2", 0), ("t2", 1), ("t2", 2)],
    }
    # Round robin on the same input is unbalanced: C2 holds 4, C0 holds 1.
    rr = assignors.assign("roundrobin", KIP54_UNEQUAL, KIP54_UNEQUAL_PARTITIONS)
    assert [len(rr[m]) for m in ("C0", "C1", "C2")] == [1, 1, 4]


def test_kip54_example_two_after_c0_leaves() -> None:
    before = assignors.assign("sticky", KIP54_UNEQUAL, KIP54_UNEQUAL_PARTITIONS)
    subs = {"C1": KIP54_UNEQUAL["C1"], "C2": KIP54_UNEQUAL["C2"]}
    after = assignors.assign(
        "sticky", subs, KIP54_UNEQUAL_PARTITIONS, owned={m: before[m] for m in subs}
    )
    assert after == {
        "C1": [("t0", 0), ("t1", 0), ("t1", 1)],
        "C2": [("t2", 0), ("t2", 1), ("t2", 2)],
    }


def test_higher_generation_wins_a_double_claim() -> None:
    subs = {"a": ["t"], "b": ["t"]}
    result = assignors.assign(
        "sticky",
        subs,
        {"t": 2},
        owned={"a": [("t", 0), ("t", 1)], "b": [("t", 0)]},
        generations={"a": 3, "b": 5},
    )
    assert result == {"a": [("t", 1)], "b": [("t", 0)]}


def test_equal_generations_lose_a_double_claim_and_cooperative_withholds_it() -> None:
    subs = {"a": ["t"], "b": ["t"], "c": ["t"]}
    owned = {"a": [("t", 0), ("t", 1)], "b": [("t", 0), ("t", 2)]}
    generations = {"a": 4, "b": 4}
    eager = assignors.assign("sticky", subs, {"t": 3}, owned=owned, generations=generations)
    assert ("t", 1) in eager["a"] and ("t", 2) in eager["b"]
    assert eager["c"] == [("t", 0)]
    coop = assignors.assign(
        "cooperative-sticky", subs, {"t": 3}, owned=owned, generations=generations
    )
    assert coop == {"a": [("t", 1)], "b": [("t", 2)], "c": []}


def test_kip429_cooperative_join_takes_two_rounds() -> None:
    """KIP-429: a new member joins; round one only revokes, round two hands out."""
    subs = {"c1": ["t"], "c2": ["t"]}
    first = assignors.assign("cooperative-sticky", subs, {"t": 6})
    assert [len(first["c1"]), len(first["c2"])] == [3, 3]
    subs["c3"] = ["t"]
    owned = dict(first)
    round1 = assignors.assign(
        "cooperative-sticky", subs, {"t": 6}, owned=owned, generations={"c1": 1, "c2": 1}
    )
    assert round1["c3"] == []
    assert len(round1["c1"]) == 2 and len(round1["c2"]) == 2
    revoked = (set(first["c1"]) - set(round1["c1"])) | (set(first["c2"]) - set(round1["c2"]))
    assert len(revoked) == 2
    round2 = assignors.assign(
        "cooperative-sticky", subs, {"t": 6}, owned=round1, generations={"c1": 2, "c2": 2, "c3": 2}
    )
    assert set(round2["c3"]) == revoked
    assert round2["c1"] == round1["c1"] and round2["c2"] == round1["c2"]


def test_cooperative_leaves_out_what_round_two_would_move_again() -> None:
    """Racks and unequal subscriptions (found by the property below): m1 and m2 on rack r0, only
    t3-1 has a replica (on r0). Round one's target gives m1's t2-1 (no replica on r0, so released)
    to m2 and the free t2-0 to m1; fed that, the target swaps them back, which would revoke t2-0
    in round two and need a third. So round one leaves t2-0 out as well, and round two settles."""
    subs = {"m1": ["t2", "t3"], "m2": ["t2", "t3"], "joiner": []}
    parts = {"t2": 2, "t3": 2}
    racks = {"m1": "r0", "m2": "r0"}
    replicas = {("t3", 1): ["r0"]}
    owned = {"m1": [("t2", 1)], "m2": [("t3", 0)]}
    round1 = assignors.assign(
        "cooperative-sticky",
        subs,
        parts,
        owned=owned,
        generations={"m1": 1, "m2": 1},
        member_racks=racks,
        partition_racks=replicas,
    )
    assert round1 == {"m1": [("t3", 1)], "m2": [("t3", 0)], "joiner": []}
    final, rounds = _cooperative_rounds(subs, parts, owned, 1, racks, replicas)
    assert rounds == 2
    assert final == {"m1": [("t2", 1), ("t3", 1)], "m2": [("t2", 0), ("t3", 0)], "joiner": []}


def test_partitions_of_unsubscribed_topics_are_dropped_and_withheld() -> None:
    subs = {"a": ["t0"], "b": ["t0", "t1"]}
    owned = {"a": [("t0", 0), ("t1", 0)], "b": [("t0", 1)]}
    eager = assignors.assign("sticky", subs, {"t0": 2, "t1": 1}, owned=owned)
    assert eager == {"a": [("t0", 0)], "b": [("t0", 1), ("t1", 0)]}
    coop = assignors.assign("cooperative-sticky", subs, {"t0": 2, "t1": 1}, owned=owned)
    assert coop == {"a": [("t0", 0)], "b": [("t0", 1)]}


def test_rack_aware_sticky_prefers_replica_racks_without_losing_balance() -> None:
    parts = {"t": 4}
    racks = {("t", 0): ["r0"], ("t", 1): ["r1"], ("t", 2): ["r0"], ("t", 3): ["r1"]}
    result = assignors.assign(
        "sticky",
        {"a": ["t"], "b": ["t"]},
        parts,
        member_racks={"a": "r1", "b": "r0"},
        partition_racks=racks,
    )
    assert result == {"a": [("t", 1), ("t", 3)], "b": [("t", 0), ("t", 2)]}


def test_rack_mismatched_owned_partition_moves_to_a_matching_member() -> None:
    racks = {("t", 0): ["r0"], ("t", 1): ["r1"]}
    result = assignors.assign(
        "sticky",
        {"a": ["t"], "b": ["t"]},
        {"t": 2},
        owned={"a": [("t", 0)], "b": [("t", 1)]},
        member_racks={"a": "r1", "b": "r0"},
        partition_racks=racks,
    )
    assert result == {"a": [("t", 1)], "b": [("t", 0)]}


def test_topics_without_metadata_are_skipped_and_every_member_is_present() -> None:
    result = assignors.assign("sticky", {"a": ["gone"], "b": ["t"]}, {"t": 1})
    assert result == {"a": [], "b": [("t", 0)]}


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky", "uniform"])
def test_equal_input_equal_output(name: str) -> None:
    subs = {f"m{k}": ["t0", "t1"] for k in range(5)}
    parts = {"t0": 7, "t1": 3}
    assert assignors.assign(name, subs, parts) == assignors.assign(
        name, dict(reversed(subs.items())), parts
    )


# -- properties ------------------------------------------------------------------------------


@PROPERTY
@given(group=groups(), name=st.sampled_from(["sticky", "cooperative-sticky", "uniform"]))
def test_fresh_assignment_is_valid_and_balanced(group, name) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, racks, replica_racks = group
    result = assignors.assign(
        name, subscriptions, partitions, member_racks=racks, partition_racks=replica_racks
    )
    assert_valid(result, subscriptions, partitions)
    assert_balanced(result, subscriptions)


@PROPERTY
@given(group=groups(), data=st.data())
def test_reassignment_from_arbitrary_ownership_is_valid_and_balanced(group, data) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, racks, replica_racks = group
    members = sorted(subscriptions)
    universe = sorted({(t, p) for t, n in partitions.items() for p in range(n)})
    owner_of = {tp: data.draw(st.sampled_from([None, *members])) for tp in universe}
    owned = {m: [tp for tp, o in owner_of.items() if o == m] for m in members}
    generations = {m: data.draw(st.integers(0, 3)) for m in members}
    for name in ("sticky", "uniform"):
        result = assignors.assign(
            name,
            subscriptions,
            partitions,
            owned=owned,
            generations=generations,
            member_racks=racks,
            partition_racks=replica_racks,
        )
        assert_valid(result, subscriptions, partitions)
        assert_balanced(result, subscriptions)


@PROPERTY
@given(group=groups(equal_subscriptions=True, with_racks=False), data=st.data())
def test_equal_subscriptions_keep_the_most_possible(group, data) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, _, _ = group
    members = sorted(subscriptions)
    topics = subscriptions[members[0]]
    universe = [(t, p) for t in topics for p in range(partitions[t])]
    owner_of = {tp: data.draw(st.sampled_from([None, *members])) for tp in universe}
    owned = {m: [tp for tp, o in owner_of.items() if o == m] for m in members}
    result = assignors.assign("sticky", subscriptions, partitions, owned=owned)
    kept = sum(len(set(owned[m]) & set(result[m])) for m in members)
    assert kept == max_keepable([len(v) for v in owned.values()], len(universe), len(members))


@PROPERTY
@given(
    group=groups(equal_subscriptions=True, with_racks=False),
    name=st.sampled_from(["sticky", "uniform"]),
)
def test_one_join_or_leave_moves_the_minimum(group, name) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, _, _ = group
    members = sorted(subscriptions)
    total = sum(partitions[t] for t in subscriptions[members[0]])
    before = assignors.assign(name, subscriptions, partitions)
    # join: the newcomer must reach floor(P/N); nobody else needs to move
    joined = {**subscriptions, "new": subscriptions[members[0]]}
    after_join = assignors.assign(name, joined, partitions, owned=before)
    assert moved(before, after_join) == total // len(joined)
    assert_balanced(after_join, joined)
    # leave: only the leaver's partitions move
    leaver = members[-1]
    remaining = {m: s for m, s in subscriptions.items() if m != leaver}
    if remaining:
        after_leave = assignors.assign(
            name, remaining, partitions, owned={m: before[m] for m in remaining}
        )
        assert moved(before, after_leave) == len(before[leaver])
        assert_balanced(after_leave, remaining)


@PROPERTY
@given(group=groups(equal_subscriptions=None), data=st.data())
def test_cooperative_never_assigns_what_another_member_owns(group, data) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, racks, replica_racks = group
    members = sorted(subscriptions)
    previous = assignors.assign("sticky", subscriptions, partitions)
    # the group changes: one member leaves (if possible) and one joins
    changed = dict(subscriptions)
    if len(members) > 1:
        del changed[data.draw(st.sampled_from(members))]
    changed["joiner"] = sorted(data.draw(st.sets(st.sampled_from(["t0", "t1", "t2", "t3"]))))
    owned = {m: previous[m] for m in changed if m in previous}
    current, _ = _cooperative_rounds(changed, partitions, owned, 1, racks, replica_racks)
    assert_valid(current, changed, partitions)
    assert_balanced(current, changed)


@PROPERTY
@given(group=groups(equal_subscriptions=False, always_racks=True), data=st.data())
def test_cooperative_racks_mixed_subscriptions_converge_in_two_rounds(group, data) -> None:  # type: ignore[no-untyped-def]
    """From any ownership, round two hands out everything round one withheld (stable group)."""
    subscriptions, partitions, racks, replica_racks = group
    members = sorted(subscriptions)
    universe = sorted(all_partitions(subscriptions, partitions))
    owner_of = {tp: data.draw(st.sampled_from([None, *members])) for tp in universe}
    owned = {m: [tp for tp, o in owner_of.items() if o == m] for m in members}
    current, _ = _cooperative_rounds(subscriptions, partitions, owned, 1, racks, replica_racks)
    assert_valid(current, subscriptions, partitions)
    assert_balanced(current, subscriptions)


# The assignor sweep's scenarios (members, topics, partitions per topic, subscriptions, racks,
# seed) on which cooperative-sticky once withheld partitions round after round, never settling.
SWEEP_SCENARIOS = [
    (10, 10, 10, "mixed", 3, 1),
    (10, 10, 100, "mixed", 3, 1),
    (100, 10, 100, "mixed", 3, 1),
]


@pytest.mark.parametrize("scenario", SWEEP_SCENARIOS)
def test_sweep_scenarios_with_racks_converge_in_two_rounds(
    scenario: tuple[int, int, int, str, int, int],
) -> None:
    """The sweep's chain: a fresh assignment, then a leave, a join, a leave and a join."""
    group = build_group(scenario)
    previous: dict[str, list[tuple[str, int]]] = {}
    generation = 1
    for step in range(5):
        if step % 2 == 1:  # the sweep's churn: the first member (by id) leaves...
            group.remove(sorted(group.subscriptions)[0])
        elif step:  # ...or a member with the first member's subscription joins
            group.add(f"n{step:05d}", list(group.template))
        owned = {m: previous.get(m, []) for m in group.subscriptions}
        previous, rounds = _cooperative_rounds(
            group.subscriptions,
            group.partitions,
            owned,
            generation,
            group.member_racks,
            {tp: sorted(r) for tp, r in group.replica_racks.items()},
        )
        assert_valid(previous, group.subscriptions, group.partitions)
        assert_balanced(previous, group.subscriptions)
        generation += rounds


def test_cooperative_checks_the_next_round_only_when_it_can_differ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Equal subscriptions without racks: round two provably keeps round one's result, so one
    balancing run per round; with racks the assignor also runs the next round to check it."""
    calls: list[int] = []
    real = sticky.balance

    def counting(*args: Any, **kwargs: Any) -> BalanceOutcome:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sticky, "balance", counting)
    subs = {"c1": ["t"], "c2": ["t"], "c3": ["t"]}
    owned = {"c1": [("t", p) for p in range(3)], "c2": [("t", p) for p in range(3, 6)]}
    assignors.assign("cooperative-sticky", subs, {"t": 6}, owned=owned)
    assert len(calls) == 1
    calls.clear()
    racks = {("t", p): ["r0" if p % 2 else "r1"] for p in range(6)}
    member_racks = {"c1": "r0", "c2": "r1", "c3": "r0"}
    assignors.assign(
        "cooperative-sticky",
        subs,
        {"t": 6},
        owned=owned,
        member_racks=member_racks,
        partition_racks=racks,
    )
    assert len(calls) >= 2


def _cooperative_rounds(  # type: ignore[no-untyped-def]
    subscriptions, partitions, owned, generation, racks, replica_racks
):
    """Rebalance as cooperative members do until nothing is left out; (result, rounds).

    Each round's result is the next round's owned partitions (members revoke what they lost and
    rejoin with the next generation). Every round must be cooperative-safe; a round leaving
    partitions out must revoke some (only members that revoke rejoin, so otherwise the next round
    never comes); with a stable group the second round must finish (KIP-429).
    """
    for rounds in (1, 2):
        current = assignors.assign(
            "cooperative-sticky",
            subscriptions,
            partitions,
            owned=owned,
            generations=dict.fromkeys(owned, generation + rounds - 1),
            member_racks=racks,
            partition_racks=replica_racks,
        )
        owner = {tp: m for m, tps in owned.items() for tp in tps}
        for member, tps in current.items():
            for tp in tps:
                assert owner.get(tp, member) == member, f"{tp} to {member}, {owner[tp]} owns it"
        revoked = {tp for tp, m in owner.items() if tp not in set(current[m])}
        missing = _unassigned(current, subscriptions, partitions)
        assert revoked or not missing, f"{sorted(missing)} left out, nobody revokes anything"
        if not missing:
            return current, rounds
        owned = current
    pytest.fail(f"cooperative rebalancing left {sorted(missing)} out after two rounds")


def _unassigned(assignment, subscriptions, partitions):  # type: ignore[no-untyped-def]
    held = Counter(tp for tps in assignment.values() for tp in tps)
    topics = {t for s in subscriptions.values() for t in s}
    return {(t, p) for t in topics for p in range(partitions.get(t, 0)) if (t, p) not in held}


def test_a_member_listing_a_partition_twice_still_owns_it() -> None:
    owned = {"a": [("t", 0), ("t", 0)], "b": [("t", 1)]}
    result = assignors.assign(
        "cooperative-sticky", {"a": ["t"], "b": ["t"]}, {"t": 2}, owned=owned, generations={"a": 1}
    )
    assert result == {"a": [("t", 0)], "b": [("t", 1)]}


def test_claims_on_unknown_partitions_are_ignored() -> None:
    owned = {"a": [("t", 5), ("gone", 0), ("t", -1)], "b": [("t", 1)]}
    result = assignors.assign("sticky", {"a": ["t"], "b": ["t"]}, {"t": 2}, owned=owned)
    assert result == {"a": [("t", 0)], "b": [("t", 1)]}
