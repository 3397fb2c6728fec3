"""The balanced, sticky assignment engine behind "sticky", "cooperative-sticky" and "uniform".

Goals, in priority order (KIP-54, KIP-881): (1) balance — partition counts differ by at most one,
or, with unequal subscriptions, no member holds two or more partitions more than another member
that could take one of them; (2) rack alignment, when racks are known and matter; (3) stickiness —
keep as many current owners as possible.

Work is done on integer partition indices (topics in name order, partitions ascending) so that a
million partitions stay cheap; the (topic, partition) tuples are only built for the output.

Steps:

1. *Claims.* Each member's owned partitions, restricted to existing topics. Two members claiming
   the same partition are resolved by generation (Kafka's three-way rule, KAFKA-14639): the higher
   generation keeps it; equal generations lose it both ("claimed by multiple owners"). Members
   visit in member order. Claims on topics the member no longer subscribes to are released.
2. *Equal subscriptions* (the fast path, Kafka's constrained builder): with ``P`` partitions and
   ``N`` members, ``E = P mod N`` members get quota ``floor(P/N) + 1``, the rest ``floor(P/N)``.
   The larger quotas go first to members that own more than ``floor(P/N)`` (each such choice
   saves one move), then to the remaining members in member order; this maximises the number of
   kept partitions, so the moves on a join or leave are the minimum possible. A member over its
   quota keeps its claims in (partition number, topic) order (KAFKA-16277, spreads topics). The
   rest are dealt round robin, in index order, to members still under quota.
3. *Unequal subscriptions* (Kafka's general builder, simplified): keep valid claims; give each
   unowned partition (topics with fewer subscribers first) to its least-loaded subscriber; then,
   per topic, move partitions from the most-loaded holder to the least-loaded subscriber until
   the two differ by at most one, repeating until a whole pass moves nothing. Each move lowers
   the sum of squared counts, so the loop terminates; at the end the balance criterion holds.
   Partitions gained in this round are moved before partitions the holder already owned.
4. *Racks* (KIP-881, only when `assignors.racks.use_rack_aware` says so): owned partitions with no
   replica on the owner's rack are released (they may come back to it if nobody on a matching
   rack can take them); unassigned partitions go first to members on a replica rack, scarcest
   partitions first, then anywhere.

`BalanceOutcome.transferring` lists, per member, the partitions it gained that another member
still validly claims; the cooperative assignor withholds those. Fed back the result minus those
partitions (the next cooperative round), the engine need not keep it: with unequal subscriptions
or racks the placement depends on which partitions are free, so it may move other claims.
`BalanceOutcome.next_round_stable` marks the one case where it provably keeps it (step 2 without
racks: every member's claims fit the quota it gets), sparing the cooperative assignor a check.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, islice, repeat
from operator import add, itemgetter, lt

from assignors.spec import (
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
    TopicDescriber,
    TopicPartition,
    subscribed_topics,
)

from .racks import member_rack, racks_match, use_rack_aware

_NO_GENERATION = -1
_MULTIPLE_OWNERS = -2


@dataclass
class BalanceOutcome:
    """The balanced assignment plus, per member, the gained partitions another member owns."""

    assignment: GroupAssignment
    transferring: dict[str, list[TopicPartition]] = field(default_factory=dict)
    next_round_stable: bool = False
    """True when feeding back ``assignment`` minus ``transferring`` as the owned partitions (same
    members, subscriptions and topics) is known to keep every claim; False means unknown."""


class _Layout:
    """Maps (topic, partition) to a dense index and back."""

    def __init__(self, topic_names: list[str], topics: TopicDescriber) -> None:
        self.topics = topic_names
        self.counts = [topics.partition_count(t) or 0 for t in topic_names]
        self.bases: list[int] = []
        total = 0
        for count in self.counts:
            self.bases.append(total)
            total += count
        self.total = total
        self.base_of = dict(zip(topic_names, self.bases, strict=True))
        self.count_of = dict(zip(topic_names, self.counts, strict=True))
        self.min_count = min(self.counts, default=0)
        self._topic_sets: dict[frozenset[str], set[int]] = {}
        self._tps: list[TopicPartition] | None = None

    def indices(self, owned: Iterable[TopicPartition]) -> list[int]:
        """Indices of the partitions in ``owned`` that exist (others are ignored, as in Kafka)."""
        bases, counts = self.base_of, self.count_of
        if self.min_count > 0:
            numbers = list(map(itemgetter(1), owned))
            if not numbers:
                return []
            if min(numbers) >= 0 and max(numbers) < self.min_count:
                try:  # fast path: every partition number is valid for every topic
                    topic_bases = map(bases.__getitem__, map(itemgetter(0), owned))
                    return list(map(add, topic_bases, numbers))
                except KeyError:
                    pass
        return [bases[t] + p for t, p in owned if t in bases and 0 <= p < counts[t]]

    def topic_index(self, index: int) -> int:
        return bisect_right(self.bases, index) - 1

    def topic_indices(self, topic_names: frozenset[str]) -> set[int]:
        """Indices of the subscribed topics (cached: most members share one subscription)."""
        cached = self._topic_sets.get(topic_names)
        if cached is None:
            cached = {i for i, t in enumerate(self.topics) if t in topic_names}
            self._topic_sets[topic_names] = cached
        return cached

    def tps(self) -> list[TopicPartition]:
        if self._tps is None:
            self._tps = [
                (t, p)
                for t, count in zip(self.topics, self.counts, strict=True)
                for p in range(count)
            ]
        return self._tps

    def to_tps(self, indices: list[int]) -> list[TopicPartition]:
        """Sorted (topic, partition) pairs of ``indices`` (sorted in place)."""
        indices.sort()
        if self._tps is None and len(indices) < 64:
            return [self.pair(i) for i in indices]
        return list(map(self.tps().__getitem__, indices))

    def pair(self, index: int) -> TopicPartition:
        t = self.topic_index(index)
        return (self.topics[t], index - self.bases[t])


def balance(
    spec: GroupSpec,
    topics: TopicDescriber,
    *,
    rack_aware: bool = True,
    use_generations: bool = True,
    extras_last: bool = False,
) -> BalanceOutcome:
    """Compute the balanced sticky assignment of ``spec`` (see the module docstring).

    With ``use_generations=False`` every claim counts as the same generation. ``extras_last``
    (changed on purpose after the freeze, in both copies: Kafka 4.4's uniform assignor): the
    larger quotas left after the members over the minimum go to the last members.
    """
    order = spec.ordered_member_ids()
    layout = _Layout(subscribed_topics(spec, topics), topics)
    if not order or layout.total == 0:
        return BalanceOutcome({m: [] for m in spec.members}, next_round_stable=True)
    members = [spec.members[m] for m in order]
    subscribed = [layout.topic_indices(m.topics) for m in members]
    claims, multiple = _validated_claims(layout, members, use_generations)

    racks: list[str | None] = [member_rack(m.rack) for m in members]
    partition_racks: list[frozenset[str]] | None = None
    if rack_aware and any(racks):
        partition_racks = [
            topics.replica_racks(t, p)
            for t, count in zip(layout.topics, layout.counts, strict=True)
            for p in range(count)
        ]
        if not use_rack_aware(racks, partition_racks):
            partition_racks = None

    state = _State(layout, claims, multiple, subscribed, racks, partition_racks)
    state.release_unsubscribed_and_mismatched()
    equal = all(s is subscribed[0] or s == subscribed[0] for s in subscribed)
    if equal:
        state.assign_equal_subscriptions(extras_last)
    else:
        state.assign_unequal_subscriptions()
    outcome = state.outcome(order, spec)
    # Equal subscriptions without racks: in the next round each member claims at most what it
    # holds now, at most `P mod N` members claim `floor(P/N) + 1`, and those all get the larger
    # quota, so no claim is over quota and only unclaimed partitions are dealt.
    outcome.next_round_stable = equal and partition_racks is None
    return outcome


def _validated_claims(
    layout: _Layout, members: Sequence[MemberSubscription], use_generations: bool
) -> tuple[list[list[int]], set[int]]:
    """Claims per member (member order) after the generation rule, and the partitions claimed
    by several members of the same generation (which nobody keeps)."""
    raw: list[list[int]] = []
    generations: list[int] = []
    for member in members:
        raw.append(layout.indices(member.owned))
        generation = member.generation if use_generations else None
        generations.append(_NO_GENERATION if generation is None else generation)
    if len(set(chain.from_iterable(raw))) == sum(map(len, raw)):
        return raw, set()  # the usual case: no partition is claimed twice
    raw = [list(dict.fromkeys(indices)) for indices in raw]
    owner: dict[int, int] = {}
    for j, indices in enumerate(raw):
        for i in indices:
            other = owner.get(i)
            if other is None:
                owner[i] = j
            elif other == _MULTIPLE_OWNERS:
                continue
            elif generations[j] > generations[other]:
                owner[i] = j
            elif generations[j] == generations[other]:
                owner[i] = _MULTIPLE_OWNERS
    claims = [[i for i in indices if owner[i] == j] for j, indices in enumerate(raw)]
    return claims, {i for i, j in owner.items() if j == _MULTIPLE_OWNERS}


class _State:
    """Working state of one balancing run; members are numbered in member order."""

    def __init__(
        self,
        layout: _Layout,
        claims: list[list[int]],
        multiple: set[int],
        subscribed: list[set[int]],
        racks: list[str | None],
        partition_racks: list[frozenset[str]] | None,
    ) -> None:
        self.layout = layout
        self.claims = claims
        self.multiple = multiple
        # set when kept claims can move (unequal subscriptions), see `_claimants`
        self.kept_claims_move = False
        self.subscribed = subscribed
        self.racks = racks
        self.partition_racks = partition_racks
        self.n = len(claims)
        self.kept: list[list[int]] = [[] for _ in claims]
        self.gained: list[list[int]] = [[] for _ in claims]
        # partition -> member that validly claimed it but does not keep it in step 1
        self.released: dict[int, int] = {}
        self.usable: list[list[int]] = claims

    # -- step 1 -------------------------------------------------------------------------------

    def release_unsubscribed_and_mismatched(self) -> None:
        """Split each member's claims into usable ones and released ones."""
        layout, racks, partition_racks = self.layout, self.racks, self.partition_racks
        all_topics = len(layout.topics)
        usable: list[list[int]] = []
        for j, claims in enumerate(self.claims):
            keep = claims
            if len(self.subscribed[j]) != all_topics:
                topic_ok = self.subscribed[j]
                keep = [i for i in keep if layout.topic_index(i) in topic_ok]
            if partition_racks is not None and racks[j] is not None:
                rack = racks[j]
                keep = [i for i in keep if rack in partition_racks[i]]
            if len(keep) == len(claims):
                keep = claims  # nothing released: keep the identity (see `outcome`)
            else:
                kept_set = set(keep)
                for i in claims:
                    if i not in kept_set:
                        self.released[i] = j
            usable.append(keep)
        self.usable = usable

    # -- step 2: equal subscriptions ----------------------------------------------------------

    def assign_equal_subscriptions(self, extras_last: bool = False) -> None:
        n = self.n
        min_quota, extras = divmod(self.layout.total, n)
        quotas = [min_quota] * n
        for j in range(n):
            if extras == 0:
                break
            if len(self.usable[j]) > min_quota:
                quotas[j] += 1
                extras -= 1
        for j in range(n):
            claims = self.usable[j]
            if len(claims) > quotas[j]:
                claims = self._in_spread_order(claims)
                for i in claims[quotas[j] :]:
                    self.released[i] = j
                claims = claims[: quotas[j]]
            self.kept[j] = claims
        for j in reversed(range(n)) if extras_last else range(n):
            if extras == 0:
                break
            if quotas[j] == min_quota:
                quotas[j] += 1
                extras -= 1
        needs = [quotas[j] - len(self.kept[j]) for j in range(n)]
        pool = self._unkept_pool()
        if self.partition_racks is not None:
            pool = self._deal_by_rack(pool, needs)
        self._deal_round_robin(pool, needs)

    def _in_spread_order(self, claims: list[int]) -> list[int]:
        layout = self.layout

        def key(i: int) -> tuple[int, int]:
            t = layout.topic_index(i)
            return (i - layout.bases[t], t)

        return sorted(claims, key=key)

    def _unkept_pool(self) -> list[int]:
        """Every subscribed partition nobody keeps, in index order."""
        total = self.layout.total
        free = bytearray(b"\x01") * total
        # C-level loop: clear the flag of every kept index
        deque(map(free.__setitem__, chain.from_iterable(self.kept), repeat(0)), maxlen=0)
        return list(compress(range(total), free))

    def _deal_round_robin(self, pool: list[int], needs: list[int]) -> None:
        """Deal ``pool`` one partition at a time to members with a need, cycling in order.

        Done level by level with slices: while every active member still needs at least ``k``
        more, the next ``k * len(active)`` partitions go out with stride ``len(active)``.
        """
        active = [j for j in range(self.n) if needs[j] > 0]
        position = 0
        while active and position < len(pool):
            step = min(needs[j] for j in active)
            width = len(active)
            block = pool[position : position + step * width]
            for offset, j in enumerate(active):
                self.gained[j].extend(block[offset::width])
                needs[j] -= step
            position += step * width
            active = [j for j in active if needs[j] > 0]
        if position < len(pool):  # pragma: no cover - quotas always add up to the pool
            raise AssertionError("balanced quotas did not cover every partition")

    def _deal_by_rack(self, pool: list[int], needs: list[int]) -> list[int]:
        """Give partitions to rack-matching members first (scarcest partitions first).

        Returns the partitions no rack-matching member could take, in index order; a released
        partition whose previous owner still has room goes back to it before the plain deal.
        """
        partition_racks = self.partition_racks
        assert partition_racks is not None
        by_rack: dict[str, deque[int]] = {}
        for j in range(self.n):
            rack = self.racks[j]
            if rack is not None and needs[j] > 0:
                by_rack.setdefault(rack, deque()).append(j)
        population: dict[str, int] = {}
        for rack in self.racks:
            if rack is not None:
                population[rack] = population.get(rack, 0) + 1

        def scarcity(i: int) -> int:
            return sum(population.get(r, 0) for r in partition_racks[i])

        leftovers: list[int] = []
        for i in sorted(pool, key=scarcity):
            for rack in sorted(partition_racks[i]):
                queue = by_rack.get(rack)
                if queue:
                    j = queue.popleft()
                    self.gained[j].append(i)
                    needs[j] -= 1
                    if needs[j] > 0:
                        queue.append(j)
                    break
            else:
                leftovers.append(i)
        leftovers.sort()
        rest: list[int] = []
        for i in leftovers:
            previous = self.released.get(i)
            if previous is not None and previous >= 0 and needs[previous] > 0:
                self.gained[previous].append(i)
                needs[previous] -= 1
            else:
                rest.append(i)
        return rest

    # -- step 3: unequal subscriptions --------------------------------------------------------

    def assign_unequal_subscriptions(self) -> None:
        layout = self.layout
        n = self.n
        self.kept_claims_move = True
        # holdings[j][t] = partitions of topic t held by j; originals are the kept claims
        holdings: list[dict[int, list[int]]] = [{} for _ in range(n)]
        counts = [0] * n
        for j in range(n):
            self.kept[j] = self.usable[j]
            for i in self.usable[j]:
                holdings[j].setdefault(layout.topic_index(i), []).append(i)
            counts[j] = len(self.usable[j])
        subscribers: dict[int, list[int]] = {}
        for j in range(n):
            for t in self.subscribed[j]:
                subscribers.setdefault(t, []).append(j)
        topic_order = sorted(subscribers, key=lambda t: (len(subscribers[t]), layout.topics[t]))
        kept = set(chain.from_iterable(self.kept))
        gained: list[set[int]] = [set() for _ in range(n)]

        def give(j: int, i: int, t: int) -> None:
            holdings[j].setdefault(t, []).append(i)
            counts[j] += 1
            gained[j].add(i)

        for t in topic_order:
            base, count = layout.bases[t], layout.counts[t]
            free = [i for i in range(base, base + count) if i not in kept]
            if not free:
                continue
            subs = subscribers[t]
            if self.partition_racks is not None:
                free = self._place_by_rack(free, subs, counts, give, t)
            heap = [(counts[j], j) for j in subs]
            heapq.heapify(heap)
            for i in free:
                previous = self.released.get(i)
                if previous is not None and previous >= 0 and previous in subs:
                    lightest = heap[0][0]
                    if counts[previous] <= lightest:
                        give(previous, i, t)
                        heap = [(counts[j], j) for j in subs]
                        heapq.heapify(heap)
                        continue
                _, j = heapq.heappop(heap)
                give(j, i, t)
                heapq.heappush(heap, (counts[j], j))

        self._rebalance(topic_order, subscribers, holdings, counts, gained)
        for j in range(n):
            own = set(self.kept[j])
            everything = list(chain.from_iterable(holdings[j].values()))
            self.kept[j] = [i for i in everything if i in own]
            self.gained[j] = [i for i in everything if i not in own]

    def _place_by_rack(
        self,
        free: list[int],
        subs: list[int],
        counts: list[int],
        give: Callable[[int, int, int], None],
        t: int,
    ) -> list[int]:
        partition_racks = self.partition_racks
        assert partition_racks is not None
        rest: list[int] = []
        for i in free:
            matching = [
                j for j in subs if self.racks[j] is not None and self.racks[j] in partition_racks[i]
            ]
            if matching:
                give(min(matching, key=lambda j: (counts[j], j)), i, t)
            else:
                rest.append(i)
        return rest

    def _rebalance(
        self,
        topic_order: list[int],
        subscribers: dict[int, list[int]],
        holdings: list[dict[int, list[int]]],
        counts: list[int],
        gained: list[set[int]],
    ) -> None:
        partition_racks = self.partition_racks
        moved = True
        while moved:
            moved = False
            for t in topic_order:
                subs = subscribers[t]
                if len(subs) < 2:
                    continue
                while True:
                    holders = [j for j in subs if holdings[j].get(t)]
                    if not holders:
                        break
                    high = max(holders, key=lambda j: (counts[j], -j))
                    low_count = min(counts[j] for j in subs)
                    if counts[high] - low_count < 2:
                        break
                    partitions = holdings[high][t]
                    newly = [i for i in partitions if i in gained[high]]
                    i = newly[-1] if newly else partitions[-1]
                    lows = [j for j in subs if counts[j] == low_count]
                    low = lows[0]
                    if partition_racks is not None:
                        for j in lows:
                            if racks_match(self.racks[j], partition_racks[i]):
                                low = j
                                break
                    partitions.remove(i)
                    gained[high].discard(i)
                    counts[high] -= 1
                    holdings[low].setdefault(t, []).append(i)
                    counts[low] += 1
                    gained[low].add(i)
                    moved = True

    # -- result -------------------------------------------------------------------------------

    def outcome(self, order: list[str], spec: GroupSpec) -> BalanceOutcome:
        layout = self.layout
        assignment: GroupAssignment = {m: [] for m in spec.members}
        transferring: dict[str, list[TopicPartition]] = {}
        claimant = self._claimants()
        gained_total = sum(map(len, self.gained))
        if gained_total > layout.total // 8:
            layout.tps()  # many new pairs: build the whole table once
        for j, member_id in enumerate(order):
            owned = spec.members[member_id].owned
            if owned and self.kept[j] is self.claims[j] and len(self.kept[j]) == len(owned):
                # kept exactly what it owned: reuse its own pairs (no new tuples)
                assignment[member_id] = self._own_pairs_plus(owned, self.kept[j], self.gained[j])
            else:
                assignment[member_id] = layout.to_tps(self.kept[j] + self.gained[j])
            moving = [i for i in self.gained[j] if claimant.get(i, j) != j] if claimant else []
            if moving:
                transferring[member_id] = layout.to_tps(moving)
        return BalanceOutcome(assignment, transferring)

    def _own_pairs_plus(
        self, owned: tuple[TopicPartition, ...], kept: list[int], gained: list[int]
    ) -> list[TopicPartition]:
        pairs = list(owned) if all(map(lt, kept, islice(kept, 1, None))) else sorted(owned)
        if gained:
            pairs += self.layout.to_tps(list(gained))
            pairs.sort()
        return pairs

    def _claimants(self) -> dict[int, int]:
        """Partition -> validly claiming member, for every partition some member gained."""
        if not (self.released or self.multiple or self.kept_claims_move):
            return {}  # nothing gained can be claimed by anyone else
        gained = set(chain.from_iterable(self.gained))
        if not gained:
            return {}
        result = {i: j for i, j in self.released.items() if i in gained}
        result.update((i, _MULTIPLE_OWNERS) for i in self.multiple & gained)
        if not self.kept_claims_move:
            return result
        for j, claims in enumerate(self.claims):
            for i in claims:
                if i in gained:
                    result[i] = j
        return result
