"""Equal subscriptions without racks: the balancing engine's quota path, over index arrays.

This is step 2 of `assignors.balance` (Kafka's constrained builder, made minimal-move) computed on
numpy arrays of partition indices instead of Python lists, so that a million partitions cost a
few array passes plus building the result lists. The rules are exactly those of the list version
(which still serves racks and unequal subscriptions), and the equality test
(`tests/assignors/test_assignor_equality.py`) holds the two to identical results:

1. Claims are the members' owned partitions that exist (others are ignored). If two members
   claim one partition, `assign_by_quota` returns ``None`` and the caller runs the list version,
   which resolves the conflict by generation; that is rare, and only then do generations matter.
2. ``P`` partitions over ``N`` members: ``E = P mod N`` members get quota ``floor(P/N) + 1``. The
   larger quotas go first, in member order, to members claiming more than ``floor(P/N)``; a member
   over its quota keeps its claims in (partition number, topic) order up to the quota and
   releases the rest; remaining larger quotas go, in member order, to members at
   ``floor(P/N)``.
3. Every partition nobody keeps, in index order, is dealt round robin to the members still
   under quota, in member order, level by level (while every such member needs at least ``k``
   more, the next ``k`` rounds go out in one slice).
4. A partition dealt to a member after another member released it is *transferring*; the
   cooperative assignor withholds it for one round.

Cost: decoding the claims touches every owned pair once (`ClaimDecoder`, which skips members
whose owned tuple it decoded in an earlier call), the array steps are a few passes over ``P``
in C, and the results reuse the members' own tuples where nothing changed and the shared
per-topic tuples (`assignors.pairs`) elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, pairwise
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from .pairs import PairTable
from .spec import TopicPartition

Indices = npt.NDArray[np.int64]


@dataclass
class QuotaResult:
    """Per member (member order): its sorted pairs, and the gained pairs another member released."""

    assigned: list[list[TopicPartition]]
    transferring: dict[int, list[TopicPartition]]
    hint: ClaimHint | None = None


class _TopicIds(dict[str, int]):
    """Topic name -> topic number; unknown topics map to -1 instead of raising."""

    def __missing__(self, key: str) -> int:
        return -1


@dataclass(frozen=True)
class ClaimHint:
    """What one run learnt about its result, to spare the next run decoding unchanged members.

    Per member id: its result as a tuple and that result's partition indices, ascending. A
    member whose owned partitions in the next run equal the tuple (cheap when they are the same
    tuple objects, as when the result is fed back) takes the indices without reading a pair.
    Valid only for the same topics and partition counts (``layout``).
    """

    layout: tuple[tuple[str, ...], tuple[int, ...]]
    members: dict[str, tuple[tuple[TopicPartition, ...], Indices]]


def decode_claims(
    table: PairTable,
    owned: Sequence[tuple[TopicPartition, ...]],
    known: Sequence[Indices | None] | None = None,
) -> tuple[Indices, Indices, Indices]:
    """(index, member, owned length) arrays for every existing claimed partition.

    ``index`` and ``member`` run in member order, each member's claims in its owned order;
    pairs naming an unknown topic or partition number are dropped, as Kafka's assignors do.
    ``known[j]``, when given, is member ``j``'s claims already decoded.
    """
    n = len(owned)
    lengths = np.fromiter(map(len, owned), dtype=np.int64, count=n)
    if known is None or not any(k is not None for k in known):
        index, member = _decode(table, owned)
        return index, member, lengths
    unknown = [j for j in range(n) if known[j] is None]
    index_u, member_u = _decode(table, [owned[j] for j in unknown])
    bounds = np.searchsorted(member_u, np.arange(len(unknown) + 1), side="left").tolist()
    parts: list[Indices] = [k if k is not None else _EMPTY for k in known]
    for position, j in enumerate(unknown):
        parts[j] = index_u[bounds[position] : bounds[position + 1]]
    sizes = np.fromiter(map(len, parts), dtype=np.int64, count=n)
    index = np.concatenate(parts) if parts else _EMPTY
    return index, np.repeat(np.arange(n, dtype=np.int64), sizes), lengths


_EMPTY: Indices = np.zeros(0, dtype=np.int64)


def _decode(
    table: PairTable, owned: Sequence[tuple[TopicPartition, ...]]
) -> tuple[Indices, Indices]:
    n = len(owned)
    lengths = np.fromiter(map(len, owned), dtype=np.int64, count=n)
    size = int(lengths.sum())
    if size == 0:
        return _EMPTY, _EMPTY
    topic_ids = _TopicIds((t, k) for k, t in enumerate(table.topics))
    # one pass over the pairs (they are scattered in memory: each touch is a cache miss)
    items: list[Any] = list(chain.from_iterable(chain.from_iterable(owned)))
    if len(items) == 2 * size:
        topic = np.fromiter(map(topic_ids.__getitem__, items[0::2]), dtype=np.int64, count=size)
        number = np.fromiter(items[1::2], dtype=np.int64, count=size)
    else:  # some "pair" is not of length 2: read the first two items of each
        flat = list(chain.from_iterable(owned))
        topic = np.fromiter(
            map(topic_ids.__getitem__, map(itemgetter(0), flat)), dtype=np.int64, count=size
        )
        number = np.fromiter(map(itemgetter(1), flat), dtype=np.int64, count=size)
    del items
    counts = np.asarray(table.counts, dtype=np.int64)
    exists = topic >= 0
    valid = exists & (number >= 0) & (number < counts[np.where(exists, topic, 0)])
    member = np.repeat(np.arange(n, dtype=np.int64), lengths)
    index = table.bases[np.where(exists, topic, 0)] + number
    if not valid.all():
        return index[valid], member[valid]
    return index, member


def _known_claims(
    table: PairTable,
    member_ids: Sequence[str],
    owned: Sequence[tuple[TopicPartition, ...]],
    hint: ClaimHint | None,
) -> list[Indices | None] | None:
    """Per member, its claims from ``hint`` if it owns exactly its result of that run."""
    if hint is None:
        return None
    known: list[Indices | None] = []
    for member_id, pairs in zip(member_ids, owned, strict=True):
        previous = hint.members.get(member_id)
        # tuple equality checks identity first, so the same pair objects compare in C
        if previous is not None and previous[0] == pairs:
            known.append(previous[1])
        else:
            known.append(None)
    if hint.layout != (tuple(table.topics), tuple(table.counts)):
        known = _renumbered(known, hint.layout, table)
    return known


def _renumbered(
    known: list[Indices | None],
    layout: tuple[tuple[str, ...], tuple[int, ...]],
    table: PairTable,
) -> list[Indices | None]:
    """Claims indexed in an older layout (a topic added, removed or resized) in this one;
    partitions that no longer exist are dropped, as decoding the pairs would drop them."""
    old_topics, old_counts = layout
    old_bases = np.zeros(len(old_topics), dtype=np.int64)
    if old_counts:
        old_bases[1:] = np.cumsum(old_counts[:-1])
    position = {t: k for k, t in enumerate(table.topics)}
    moved_to = np.array([position.get(t, -1) for t in old_topics], dtype=np.int64)
    counts = np.asarray(table.counts, dtype=np.int64)
    hits = [k for k in known if k is not None]
    if not hits:
        return known
    every = np.concatenate(hits)
    old_topic = np.searchsorted(old_bases, every, side="right") - 1
    number = every - old_bases[old_topic]
    topic = moved_to[old_topic]
    exists = topic >= 0
    exists &= number < counts[np.where(exists, topic, 0)]
    renumbered = np.where(exists, table.bases[np.where(exists, topic, 0)] + number, -1)
    sizes = np.cumsum([len(k) for k in hits])[:-1]
    parts = iter(np.split(renumbered, sizes))
    result: list[Indices | None] = []
    for k in known:
        if k is None:
            result.append(None)
        else:
            part = next(parts)
            result.append(part[part >= 0])
    return result


def assign_by_quota(
    table: PairTable,
    owned: Sequence[tuple[TopicPartition, ...]],
    member_ids: Sequence[str] | None = None,
    hint: ClaimHint | None = None,
    extras_last: bool = False,
) -> QuotaResult | None:
    """Steps 1-4 of the module docstring; ``None`` if some partition is claimed twice.

    With ``member_ids`` (member order) the result carries a `ClaimHint` for the next run;
    ``hint`` is the previous run's. ``extras_last``: the larger quotas left after the members
    over the minimum go to the last members in member order, not the first.
    """
    n, total = len(owned), table.total
    known = _known_claims(table, member_ids, owned, hint) if member_ids is not None else None
    index, member, lengths = decode_claims(table, owned, known)
    if index.size and np.bincount(index, minlength=total).max() > 1:
        return None
    claimed = np.bincount(member, minlength=n)

    min_quota, extras = divmod(total, n)
    quota = np.full(n, min_quota, dtype=np.int64)
    larger = np.flatnonzero(claimed > min_quota)[:extras]
    quota[larger] += 1
    extras -= larger.size

    keep = np.ones(index.size, dtype=bool)
    over = claimed > quota
    if over.any():
        chosen = np.flatnonzero(over[member])
        chosen_index, chosen_member = index[chosen], member[chosen]
        topic = table.topic_of(chosen_index)
        spread = (chosen_index - table.bases[topic]) * len(table.topics) + topic
        order = np.lexsort((spread, chosen_member))
        sorted_member = chosen_member[order]
        first = np.searchsorted(sorted_member, sorted_member, side="left")
        rank = np.arange(order.size) - first
        keep[chosen[order[rank >= quota[sorted_member]]]] = False
    at_minimum = np.flatnonzero(quota == min_quota)
    quota[at_minimum[at_minimum.size - extras :] if extras_last else at_minimum[:extras]] += 1

    kept_count = np.bincount(member[keep], minlength=n)
    needs = quota - kept_count
    taken = np.zeros(total, dtype=bool)
    taken[index[keep]] = True
    pool = np.flatnonzero(~taken)
    pool_pairs = table.pairs(pool, distinct_ascending=True)

    gained: list[list[TopicPartition]] = [[] for _ in range(n)]
    pool_owner = np.empty(pool.size, dtype=np.int64)
    active = np.flatnonzero(needs > 0)
    position = 0
    while active.size and position < pool.size:
        step = int(needs[active].min())
        width = active.size
        end = position + step * width
        pool_owner[position:end] = np.tile(active, step)
        block = pool_pairs[position:end]
        for offset, j in enumerate(active.tolist()):
            gained[j] += block[offset::width]
        needs[active] -= step
        position = end
        active = active[needs[active] > 0]
    if position < pool.size:  # pragma: no cover - quotas always add up to the pool
        raise AssertionError("balanced quotas did not cover every partition")

    transferring: dict[int, list[TopicPartition]] = {}
    if not keep.all():
        released = np.zeros(total, dtype=bool)
        released[index[~keep]] = True
        moving = np.flatnonzero(released[pool])
        by_owner = moving[np.argsort(pool_owner[moving], kind="stable")]
        for j, positions in _groups(pool_owner[by_owner], by_owner):
            transferring[j] = list(map(pool_pairs.__getitem__, positions))

    dropped = np.bincount(member[~keep], minlength=n)
    intact = (dropped == 0) & (claimed == lengths)  # kept every pair it owned, all valid
    # members whose claims are not in ascending index order need a sort
    descending = np.zeros(n, dtype=bool)
    if index.size > 1:
        same = member[1:] == member[:-1]
        descending[member[1:][same & (index[1:] <= index[:-1])]] = True
    gained_any = np.zeros(n, dtype=bool)
    gained_any[pool_owner] = True
    assigned = _assigned_pairs(
        table, owned, index, member, keep, claimed, dropped, intact, descending, gained
    )
    next_hint = None
    if member_ids is not None:
        reused = intact & ~descending & ~gained_any
        next_hint = _next_hint(
            table, member_ids, owned, assigned, index, member, keep, reused, pool, pool_owner
        )
    return QuotaResult(assigned, transferring, next_hint)


def _next_hint(
    table: PairTable,
    member_ids: Sequence[str],
    owned: Sequence[tuple[TopicPartition, ...]],
    assigned: list[list[TopicPartition]],
    index: Indices,
    member: Indices,
    keep: npt.NDArray[np.bool_],
    reused: npt.NDArray[np.bool_],
    pool: Indices,
    pool_owner: Indices,
) -> ClaimHint:
    """Each member's result and its ascending indices; members whose result is exactly what
    they owned, in order, reuse their owned tuple and claims (no new tuple, no sort)."""
    n = len(owned)
    starts = np.searchsorted(member, np.arange(n + 1), side="left").tolist()
    changed = np.flatnonzero(~reused)
    finals: dict[int, Indices] = {}
    if changed.size * 8 > n:  # many members changed: one pass over every partition
        owner = np.empty(table.total, dtype=np.int64)
        owner[index[keep]] = member[keep]
        owner[pool] = pool_owner
        by_owner = np.argsort(owner, kind="stable")
        bounds = np.searchsorted(owner[by_owner], np.arange(n + 1), side="left").tolist()
        for j in changed.tolist():
            finals[j] = by_owner[bounds[j] : bounds[j + 1]]
    else:  # a few changed: touch only their partitions
        by_pool_owner = np.argsort(pool_owner, kind="stable")
        gained_bounds = np.searchsorted(
            pool_owner[by_pool_owner], np.arange(n + 1), side="left"
        ).tolist()
        for j in changed.tolist():
            a, b = starts[j], starts[j + 1]
            kept = index[a:b][keep[a:b]]
            gained = pool[by_pool_owner[gained_bounds[j] : gained_bounds[j + 1]]]
            finals[j] = np.sort(np.concatenate((kept, gained)))
    members: dict[str, tuple[tuple[TopicPartition, ...], Indices]] = {}
    reused_list = reused.tolist()
    for j, member_id in enumerate(member_ids):
        if reused_list[j]:
            members[member_id] = (owned[j], index[starts[j] : starts[j + 1]])
        else:
            members[member_id] = (tuple(assigned[j]), finals[j])
    return ClaimHint((tuple(table.topics), tuple(table.counts)), members)


def _assigned_pairs(
    table: PairTable,
    owned: Sequence[tuple[TopicPartition, ...]],
    index: Indices,
    member: Indices,
    keep: npt.NDArray[np.bool_],
    claimed: Indices,
    dropped: Indices,
    intact: npt.NDArray[np.bool_],
    descending: npt.NDArray[np.bool_],
    gained: list[list[TopicPartition]],
) -> list[list[TopicPartition]]:
    """Each member's final pairs, sorted: its own tuples where it kept all it owned."""
    n = len(owned)
    changed = np.flatnonzero(~intact & (claimed > dropped))
    rebuilt: dict[int, list[TopicPartition]] = {}
    if changed.size:
        mask = np.isin(member, changed) & keep
        kept_index, kept_member = index[mask], member[mask]
        order = np.lexsort((kept_index, kept_member))
        kept_pairs = table.pairs(kept_index[order])
        starts = np.searchsorted(kept_member[order], changed, side="left").tolist()
        ends = np.searchsorted(kept_member[order], changed, side="right").tolist()
        for j, start, end in zip(changed.tolist(), starts, ends, strict=True):
            rebuilt[j] = kept_pairs[start:end]
    intact_list = intact.tolist()
    descending_list = descending.tolist()
    result: list[list[TopicPartition]] = []
    for j in range(n):
        new = gained[j]
        if intact_list[j]:
            pairs = sorted(owned[j]) if descending_list[j] else list(owned[j])
        else:
            pairs = rebuilt.get(j, [])
        if new:
            if pairs:
                pairs += new
                pairs.sort()
            else:
                pairs = new
        result.append(pairs)
    return result


def _groups(keys: Indices, values: Indices) -> list[tuple[int, list[int]]]:
    """Runs of equal ``keys`` (already grouped) with their ``values``."""
    if keys.size == 0:
        return []
    cuts = (np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist()
    bounds = [0, *cuts, int(keys.size)]
    key_list, value_list = keys.tolist(), values.tolist()
    return [(key_list[a], value_list[a:b]) for a, b in pairwise(bounds)]
