"""`PairForms`: its fast paths give what the plain definitions give, for any assignment,
including targets naming topics deleted or shrunk since."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance.consumer_group.group import TopicInfo, TopicMetadata, freeze
from rebalance.consumer_group.pair_forms import PairForms
from rebalance.consumer_group.records import Assignment

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


# A record may name a topic that is gone ("id-9") or partitions past a topic's count now.
stale_targets = st.dictionaries(
    st.sampled_from(["id-1", "id-2", "id-3", "id-9"]),
    st.sets(st.integers(0, 6), min_size=1),
).map(lambda d: freeze({t: set(ps) for t, ps in d.items()}))


@given(stale_targets)
@settings(max_examples=200)
def test_a_records_target_becomes_the_assignors_owned_pairs(target: Assignment) -> None:
    owned, complete = PairForms(METADATA).owned(target)
    counts = {i: c for i, c in TOPICS.values()}
    expected = sorted((NAMES[t], p) for t, ps in target if t in counts for p in ps if p < counts[t])
    assert owned == expected
    assert complete == (len(expected) == sum(len(ps) for _, ps in target))
