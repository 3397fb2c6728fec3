"""`PairForms`: its fast paths give what the plain definitions give, for any assignment,
including targets naming topics deleted or shrunk since."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance.consumer_group import pair_forms
from rebalance.consumer_group.group import freeze
from rebalance.consumer_group.pair_forms import PairForms
from rebalance.consumer_group.records import Assignment
from rebalance.topics import TopicInfo, TopicMetadata

# Topic ids sort in another order than the names, as random UUIDs do.
TOPICS = {"apple": ("id-3", 4), "berry": ("id-1", 2), "cherry": ("id-2", 5)}
METADATA = TopicMetadata.of(TopicInfo(n, i, c) for n, (i, c) in TOPICS.items())
NAMES = {i: n for n, (i, _) in TOPICS.items()}

pairs_of = st.sets(st.sampled_from([(n, p) for n, (_, c) in TOPICS.items() for p in range(c)])).map(
    sorted
)


def plain_assignment(pairs: list[tuple[str, int]]) -> Assignment:
    by_id: dict[str, set[int]] = {}
    for name, p in pairs:
        by_id.setdefault(TOPICS[name][0], set()).add(p)
    return freeze(by_id)


@given(pairs_of)
@settings(max_examples=200)
def test_an_assignor_result_becomes_the_records_form_and_the_events(
    pairs: list[tuple[str, int]],
) -> None:
    forms = PairForms(METADATA)
    assignment = forms.assignment(pairs)
    assert assignment == plain_assignment(pairs)
    assert forms.named(assignment) == [(NAMES[t], ps) for t, ps in assignment]


@given(st.lists(pairs_of, max_size=6))
@settings(max_examples=200)
def test_one_snapshot_converts_many_results_alike(results: list[list[tuple[str, int]]]) -> None:
    """A snapshot converts a target's every member: the layouts it keeps from one member's
    topics to the next give what a fresh snapshot gives, and `converted` both forms at once."""
    forms = PairForms(METADATA)
    for pairs in results + results:
        assignment = forms.assignment(pairs)
        assert assignment == plain_assignment(pairs)
        named = [(NAMES[t], ps) for t, ps in assignment]
        assert forms.converted(pairs) == (assignment, named)
        assert forms.named(assignment) == named
        owned, complete = forms.owned(assignment)
        assert (owned, complete) == (sorted(pairs), True)


# A record may name a topic that is gone ("id-9") or partitions past a topic's count now.
stale_targets = st.dictionaries(
    st.sampled_from(["id-1", "id-2", "id-3", "id-9"]),
    st.sets(st.integers(0, 6), min_size=1),
).map(lambda d: freeze({t: set(ps) for t, ps in d.items()}))


@given(st.lists(stale_targets, min_size=1, max_size=6))
@settings(max_examples=200)
def test_a_records_target_becomes_the_assignors_owned_pairs(targets: list[Assignment]) -> None:
    forms = PairForms(METADATA)  # one snapshot for several targets, as for a group's members
    counts = {i: c for i, c in TOPICS.values()}
    for target in targets + targets:
        owned, complete = forms.owned(target)
        expected = sorted(
            (NAMES[t], p) for t, ps in target if t in counts for p in ps if p < counts[t]
        )
        assert owned == expected
        assert complete == (len(expected) == sum(len(ps) for _, ps in target))


def test_shared_entries_are_rebuilt_when_over_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over `ENTRY_BUDGET` the oldest topics' entries are dropped and rebuilt on demand; a
    conversion's results do not change."""
    monkeypatch.setattr(pair_forms, "ENTRY_BUDGET", 6)
    monkeypatch.setattr(pair_forms, "_entries", {})
    monkeypatch.setattr(pair_forms, "_held", 0)
    pairs = [("apple", 3), ("berry", 1), ("cherry", 4)]
    for _ in range(3):  # each conversion needs more entries than the budget keeps
        forms = PairForms(METADATA)
        assignment = forms.assignment(pairs)
        assert assignment == plain_assignment(pairs)
        assert forms.named(assignment) == [(NAMES[t], ps) for t, ps in assignment]
        assert pair_forms._held <= 6
    assert pair_forms.topic_entries("big", 9) == tuple(("big", (p,)) for p in range(9))
