"""Kafka's RangeAssignor ("range"), including the rack-aware path of KIP-881.

Per topic, the subscribers in member order each take a contiguous range of partitions; the first
``P mod C`` of them take one extra. Example: topic t with 7 partitions, members a, b, c →
a [t-0, t-1, t-2], b [t-3, t-4], c [t-5, t-6]. Topics with the same partition count and the same
subscribers are therefore co-partitioned (member k gets the same partition numbers of each).

Rack-aware path (used when some topic passes the rack gate of `assignors.racks`): quotas stay
those of plain range, but capacity for the extra partitions is first-come in member order.
Topics with identical subscriber lists and partition counts are handled together so that
co-partitioning is preferred over rack alignment: partition p of every topic in the set goes to
the first member whose rack matches p of all of them. A lone topic is walked member by member,
each taking rack-matching partitions. Whatever is left is then handed out by the plain walk.

Range is not sticky: a new member id that sorts early shifts every range behind it. Static
members (instance ids) keep their position across restarts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import getitem, itemgetter

from .pairs import topic_pairs
from .racks import member_rack, racks_match, topic_racks, use_rack_aware
from .spec import GroupAssignment, GroupSpec, TopicDescriber, subscribed_topics


class RangeAssignor:
    """Per-topic contiguous ranges; rack-aware when racks are known and matter."""

    sorted_output = True
    """Returns fresh lists sorted by (topic, partition); `assignors.assign` relies on it."""

    reads_owned = False
    """The result does not depend on what members own (range is not sticky): a caller may
    leave `MemberSubscription.owned` empty (the KIP-848 core does, for 1M-partition groups)."""

    name = "range"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        order = spec.ordered_member_ids()
        result: GroupAssignment = {m: [] for m in spec.members}
        racks = {m: member_rack(spec.members[m].rack) for m in order}
        any_rack = any(racks.values())
        subscribers_of = _subscribers_by_topic(spec, order)
        names = subscribed_topics(spec, topics)
        counts = [topics.partition_count(topic) or 0 for topic in names]
        if not any_rack and _one_group(names, counts, subscribers_of):
            return _co_partitioned_ranges(names, counts[0], subscribers_of[names[0]], result)
        plan: list[tuple[str, list[str], int, list[frozenset[str]], bool]] = []
        for topic, count in zip(names, counts, strict=True):
            subscribers = subscribers_of[topic]
            partition_racks: list[frozenset[str]] = []
            rack_aware = False
            if any_rack and any(racks[m] for m in subscribers):
                partition_racks = topic_racks(topics, topic, count)
                rack_aware = use_rack_aware((racks[m] for m in subscribers), partition_racks)
            plan.append((topic, subscribers, count, partition_racks, rack_aware))

        if not any(rack_aware for *_, rack_aware in plan):
            return _plain_ranges_by_group(plan, result)
        states = [
            _TopicState(topic, subscribers, count, partition_racks, rack_aware)
            for topic, subscribers, count, partition_racks, rack_aware in plan
        ]
        _assign_rack_aware(states, racks)
        for state in states:
            state.assign_remaining_in_ranges()
            for member, numbers in state.assigned.items():
                result[member].extend((state.topic, p) for p in numbers)
        for tps in result.values():
            tps.sort()
        return result


def _subscribers_by_topic(spec: GroupSpec, order: list[str]) -> dict[str, list[str]]:
    """Topic -> its subscribers in member order; members sharing a subscription share the work
    (and topics with the same subscribers share one list)."""
    by_subscription: dict[frozenset[str], list[str]] = {}
    for member_id in order:
        by_subscription.setdefault(spec.members[member_id].topics, []).append(member_id)
    if len(by_subscription) == 1:
        ((subscription, members),) = by_subscription.items()
        return dict.fromkeys(subscription, members)
    subscribers: dict[str, list[str]] = {}
    for member_id in order:
        for topic in spec.members[member_id].topics:
            subscribers.setdefault(topic, []).append(member_id)
    return subscribers


def _one_group(names: list[str], counts: list[int], subscribers: dict[str, list[str]]) -> bool:
    """True if every topic has the same subscribers (the same list) and partition count."""
    if not names:
        return False
    first = subscribers[names[0]]
    return all(subscribers[t] is first for t in names) and counts.count(counts[0]) == len(counts)


def _co_partitioned_ranges(
    names: list[str], count: int, subscribers: list[str], result: GroupAssignment
) -> GroupAssignment:
    """The plain walk when all topics share subscribers and partition count: member ``k`` takes
    the same range of every topic, so its list is that slice of each topic's pairs, in topic
    order (one C-level pass per member instead of one Python step per topic and member)."""
    tables = [topic_pairs(t, count) for t in names]
    quota, extras = divmod(count, len(subscribers))
    start = 0
    for position, member in enumerate(subscribers):
        length = quota + 1 if position < extras else quota
        if length == 0:
            break
        if length == 1:
            result[member] = list(map(itemgetter(start), tables))
        else:
            span = slice(start, start + length)
            result[member] = list(chain.from_iterable(map(getitem, tables, repeat(span))))
        start += length
    return result


def _plain_ranges_by_group(
    plan: list[tuple[str, list[str], int, list[frozenset[str]], bool]], result: GroupAssignment
) -> GroupAssignment:
    """The plain walk, topics with the same subscribers (the same list) and partition count
    taken together as `_co_partitioned_ranges` takes them; lists sorted once at the end."""
    groups: dict[tuple[tuple[str, ...], int], tuple[list[str], list[str]]] = {}
    for topic, subscribers, count, _, _ in plan:
        groups.setdefault((tuple(subscribers), count), (subscribers, []))[1].append(topic)
    if len(groups) == len(plan):  # nothing shared: topic by topic, in topic order
        for topic, subscribers, count, _, _ in plan:
            _assign_plain_ranges(topic, subscribers, count, result)
        return result
    for (_, count), (subscribers, names) in groups.items():
        part: GroupAssignment = {}
        _co_partitioned_ranges(names, count, subscribers, part)
        for member, pairs in part.items():
            if result.get(member):
                result[member] += pairs
            else:
                result[member] = pairs
    if len(groups) > 1:
        for pairs in result.values():
            pairs.sort()
    return result


def _assign_plain_ranges(
    topic: str, subscribers: list[str], count: int, result: GroupAssignment
) -> None:
    """Subscriber ``i`` of ``C`` takes ``q`` partitions from ``q*i + min(i, r)``, one more if
    ``i < r`` (``q, r = divmod(P, C)``). Topics arrive in name order, so lists stay sorted."""
    quota, extras = divmod(count, len(subscribers))
    start = 0
    for position, member in enumerate(subscribers):
        length = quota + 1 if position < extras else quota
        if length == 0:
            break
        result[member] += zip(repeat(topic, length), range(start, start + length), strict=True)
        start += length


@dataclass
class _TopicState:
    """Quota bookkeeping for one topic: ``q`` each, ``extras`` members may take ``q + 1``."""

    topic: str
    subscribers: list[str]
    count: int
    racks: list[frozenset[str]] = field(default_factory=list)
    rack_aware: bool = False
    assigned: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    unassigned: dict[int, None] = field(init=False)
    quota: int = field(init=False)
    extras: int = field(init=False)

    def __post_init__(self) -> None:
        self.unassigned = dict.fromkeys(range(self.count))
        self.quota, self.extras = divmod(self.count, len(self.subscribers))

    def has_capacity(self, member: str) -> bool:
        held = len(self.assigned[member])
        return held < self.quota or (held == self.quota and self.extras > 0)

    def give(self, member: str, partition: int) -> None:
        if len(self.assigned[member]) == self.quota:
            self.extras -= 1
        self.assigned[member].append(partition)
        del self.unassigned[partition]

    def assign_remaining_in_ranges(self) -> None:
        """The plain range walk over what is still unassigned (all of it without racks)."""
        for member in self.subscribers:
            while self.unassigned and self.has_capacity(member):
                self.give(member, next(iter(self.unassigned)))


def _assign_rack_aware(states: list[_TopicState], racks: dict[str, str | None]) -> None:
    groups: dict[tuple[tuple[str, ...], int], list[_TopicState]] = defaultdict(list)
    for state in states:
        groups[(tuple(state.subscribers), state.count)].append(state)
    for (subscribers, count), group in groups.items():
        if not any(s.rack_aware for s in group):
            continue
        if len(group) >= 2:
            _co_partitioned_by_rack(list(subscribers), count, group, racks)
        else:
            _single_topic_by_rack(group[0], racks)


def _co_partitioned_by_rack(
    subscribers: list[str], count: int, group: list[_TopicState], racks: dict[str, str | None]
) -> None:
    candidates = list(subscribers)
    for p in range(count):
        for member in candidates:
            if all(
                racks_match(racks[member], s.racks[p] if s.racks else frozenset())
                and s.has_capacity(member)
                for s in group
            ):
                for s in group:
                    s.give(member, p)
                break
        candidates = [m for m in candidates if any(s.has_capacity(m) for s in group)]


def _single_topic_by_rack(state: _TopicState, racks: dict[str, str | None]) -> None:
    for member in state.subscribers:
        rack = racks[member]
        if rack is None:
            continue
        for p in [p for p in state.unassigned if rack in state.racks[p]]:
            if not state.has_capacity(member):
                break
            state.give(member, p)
