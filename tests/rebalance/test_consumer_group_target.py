"""`compute_target` gives what the plain definitions give: the assignor run with every member's
current target as what it owns, its result turned into records by topic id, the changed members
those whose record differs. For `range`, which reads nothing it is handed as owned
(`reads_owned`), the core hands over nothing: the result must not change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import assignors
from rebalance.consumer_group.group import MemberInputs, freeze, subscribed_topics
from rebalance.consumer_group.records import Assignment
from rebalance.consumer_group.target import TargetInputs, compute_target, reads_owned
from rebalance.topics import TopicInfo, TopicMetadata

# Topic ids sort in another order than the names, as random UUIDs do; "gone" is a topic id a
# target may still name after its topic was deleted.
TOPICS = {"apple": ("id-3", 4), "berry": ("id-1", 2), "cherry": ("id-2", 5)}
METADATA = TopicMetadata.of(TopicInfo(n, i, c) for n, (i, c) in TOPICS.items())
NAMES = {i: n for n, (i, _) in TOPICS.items()}
COUNTS = {i: c for i, c in TOPICS.values()}

members_of = st.dictionaries(
    st.sampled_from([f"m{n}" for n in range(6)]),
    st.tuples(
        st.lists(st.sampled_from([*TOPICS, "absent"]), max_size=4, unique=True).map(tuple),
        st.dictionaries(
            st.sampled_from([*COUNTS, "gone"]), st.sets(st.integers(0, 5), min_size=1)
        ).map(lambda d: freeze({t: set(ps) for t, ps in d.items()})),
    ),
    min_size=1,
)


def plain(assignor: str, members: dict[str, tuple[tuple[str, ...], Assignment]]) -> tuple[
    dict[str, Assignment], dict[str, list[tuple[str, tuple[int, ...]]]]
]:  # fmt: skip
    owned = {
        m: sorted((NAMES[t], p) for t, ps in target if t in COUNTS for p in ps if p < COUNTS[t])
        for m, (_, target) in members.items()
    }
    result = assignors.assign(
        assignor,
        {m: sorted(subscribed_topics(names, None, METADATA)) for m, (names, _) in members.items()},
        {n: c for n, (_, c) in TOPICS.items()},
        owned=owned,
    )
    changed: dict[str, Assignment] = {}
    by_name: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for m in sorted(result):
        by_id: dict[str, set[int]] = {}
        for name, p in result[m]:
            by_id.setdefault(TOPICS[name][0], set()).add(p)
        record = freeze(by_id)
        if record != members[m][1]:
            changed[m] = record
        by_name[m] = [(NAMES[t], ps) for t, ps in record]
    return changed, by_name


@given(st.sampled_from(["uniform", "range"]), members_of)
@settings(max_examples=200, deadline=None)
def test_a_target_is_the_plain_definitions(
    assignor: str, members: dict[str, tuple[tuple[str, ...], Assignment]]
) -> None:
    inputs = TargetInputs(
        "g",
        1,
        assignor,
        METADATA,
        tuple(MemberInputs(m, names, None, None, None) for m, (names, _) in members.items()),
        {m: target for m, (_, target) in members.items() if target},
    )
    computed = compute_target(inputs)
    changed, by_name = plain(assignor, members)
    assert computed.changed == changed
    assert {m: list(named) for m, named in computed.by_name.items()} == by_name


def test_only_range_is_known_to_ignore_what_members_own() -> None:
    assert not reads_owned("range")
    assert reads_owned("uniform")
    assert reads_owned("no-such-assignor")  # left for the assignor's run to refuse
