"""Quality checks for assignments (Kafka's validity, balance and stickiness metrics)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from hypothesis import strategies as st

TP = tuple[str, int]
Assignment = Mapping[str, Sequence[TP]]


def all_partitions(
    subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
) -> set[TP]:
    topics = {t for ts in subscriptions.values() for t in ts}
    return {(t, p) for t in topics for p in range(partitions.get(t, 0))}


def assert_valid(
    assignment: Assignment,
    subscriptions: Mapping[str, Sequence[str]],
    partitions: Mapping[str, int],
    *,
    withheld: set[TP] | None = None,
) -> None:
    """Every subscribed partition exactly once (minus ``withheld``), only to a subscriber."""
    assert set(assignment) == set(subscriptions), "every member must be present"
    counts = Counter(tp for tps in assignment.values() for tp in tps)
    duplicates = [tp for tp, n in counts.items() if n > 1]
    assert not duplicates, f"assigned more than once: {duplicates}"
    for member, tps in assignment.items():
        assert list(tps) == sorted(tps), f"{member}'s list is not sorted"
        for topic, _ in tps:
            assert topic in subscriptions[member], f"{member} got {topic} without subscribing"
    expected = all_partitions(subscriptions, partitions) - (withheld or set())
    assert set(counts) == expected


def assert_balanced(assignment: Assignment, subscriptions: Mapping[str, Sequence[str]]) -> None:
    """Equal subscriptions: max - min <= 1. Otherwise Kafka's weaker rule: no member holding a
    partition of topic t has two or more partitions more than another subscriber of t."""
    sizes = {m: len(tps) for m, tps in assignment.items()}
    subscribed = {m: set(ts) for m, ts in subscriptions.items()}
    if len({frozenset(s) for s in subscribed.values()}) <= 1:
        if sizes:
            assert max(sizes.values()) - min(sizes.values()) <= 1, sizes
        return
    for holder, tps in assignment.items():
        for topic in {t for t, _ in tps}:
            for other, topics in subscribed.items():
                if topic in topics:
                    assert sizes[holder] - sizes[other] <= 1, (holder, other, topic, sizes)


def moved(before: Assignment, after: Assignment) -> int:
    """Partitions whose owner changed (a partition of a departed member counts as moved)."""
    owner = {tp: m for m, tps in before.items() for tp in tps}
    return sum(1 for m, tps in after.items() for tp in tps if owner.get(tp) != m)


def max_keepable(owned_counts: Sequence[int], total: int, members: int) -> int:
    """The most partitions the current owners can keep in a balanced equal-subscription result.

    Quotas are floor(P/N) for all and one more for P mod N members; giving the larger quotas to
    the members owning the most is optimal (exchange argument).
    """
    low, extra = divmod(total, members)
    ranked = sorted(owned_counts, reverse=True) + [0] * (members - len(owned_counts))
    return sum(min(c, low + 1) if k < extra else min(c, low) for k, c in enumerate(ranked))


TOPICS = ("t0", "t1", "t2", "t3")


@st.composite
def groups(
    draw: st.DrawFn,
    *,
    equal_subscriptions: bool | None = None,
    max_members: int = 7,
    with_racks: bool = True,
    always_racks: bool = False,
) -> tuple[dict[str, list[str]], dict[str, int], dict[str, str | None], dict[TP, list[str]]]:
    """A random group: subscriptions, partition counts, member racks and replica racks.

    With ``with_racks`` about half the groups have racks; ``always_racks`` gives every group
    racks (members may still lack one, and replicas may be on no rack).
    """
    partitions = {t: draw(st.integers(0, 9)) for t in TOPICS}
    names = draw(
        st.lists(
            st.sampled_from([f"m{k}" for k in range(12)]),
            min_size=1,
            max_size=max_members,
            unique=True,
        )
    )
    equal = draw(st.booleans()) if equal_subscriptions is None else equal_subscriptions
    if equal:
        topics = sorted(draw(st.sets(st.sampled_from(TOPICS), min_size=1)))
        subscriptions = {m: list(topics) for m in names}
    else:
        subscriptions = {m: sorted(draw(st.sets(st.sampled_from(TOPICS)))) for m in names}
    racks: dict[str, str | None] = {}
    replica_racks: dict[TP, list[str]] = {}
    if always_racks or (with_racks and draw(st.booleans())):
        rack = st.sampled_from([None, "r0", "r1", "r2"])
        racks = {m: draw(rack) for m in names}
        for t, count in partitions.items():
            for p in range(count):
                replica_racks[(t, p)] = sorted(
                    draw(st.sets(st.sampled_from(["r0", "r1", "r2"]), max_size=2))
                )
    return subscriptions, partitions, racks, replica_racks
