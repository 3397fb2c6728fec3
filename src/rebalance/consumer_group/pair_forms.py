"""An assignment's three forms around a server assignor, converted fast.

The assignors speak sorted lists of (topic name, partition) pairs; the consumer group's records
speak topic ids (`Assignment`: sorted (topic id, sorted partitions) tuples); the target event
speaks [[topic name, [partitions]]]. A 10,000-member group over a million partitions usually
gives each member one partition of each of 100 topics, so a conversion walks a million
(member, topic) entries per target: at a Python-level step each, that is the bulk of the
target's cost. Here each conversion is a few passes of C-level `map`/`zip`/`sorted` for that
shape (one partition per topic), with a general per-topic path for the rest; both give the same
result (`tests/rebalance/test_consumer_group_pair_forms.py`). What depends only on which topics
a member holds (their order in the other form, their ids or names) is worked out once per
distinct list of topics (`_Layout`), not once per member, where sorting each member's 100 topics
by id was a large part of a 10,000-member target. And the entries themselves, ``(topic, (p,))``,
are shared
tuples (`topic_entries`), as the assignors share their pairs: a member's record is one tuple of
references, not a hundred new tuples for the garbage collector to walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import groupby, repeat
from operator import getitem, itemgetter
from typing import Any

from assignors import TopicPartition
from assignors.pairs import topic_pairs
from rebalance.consumer_group.records import Assignment
from rebalance.topics import TopicMetadata

_first = itemgetter(0)
_second = itemgetter(1)

#: A C-level function giving a sequence's items in another order (`itemgetter(*order)`).
Reorder = Callable[[Sequence[Any]], Sequence[Any]]

#: An entry of a record's or the event's assignment: (topic id or name, partitions).
Entry = tuple[str, tuple[int, ...]]

ENTRY_BUDGET = 2_000_000
"""Most entries the shared tables keep (about 64 bytes each with their table's slot, so about
130 MB at most): the records of two 1M-partition groups, or of one across a topic's growth."""

#: `_singles[p]` is ``(p,)``, shared by every entry of partition `p`. Replaced, never extended
#: in place, so a thread reading the old list is not disturbed.
_singles: list[tuple[int]] = []
#: (topic id or name, count) -> its entries: ``((key, (0,)), ..., (key, (count - 1,)))``.
_entries: dict[tuple[str, int], tuple[Entry, ...]] = {}
_held = 0


def topic_entries(key: str, count: int) -> tuple[Entry, ...]:
    """Each partition's record entry ``(key, (p,))`` of the topic whose id is `key`, shared
    between targets while within `ENTRY_BUDGET`.

    A 10,000-member target over a million partitions is a million such entries; built afresh
    they were a million new tuples per target, and the garbage collector's passes over them cost
    about as much as building them (a range join moves nearly every member). A group's records
    hold each partition's entry once, so sharing them costs no memory there. Tuples of strings
    and ints are immutable all the way down: sharing changes no value. The tables are a memo of
    a pure function of ``(key, count)``, not group state; the oldest go first when over budget,
    and are rebuilt on demand. Threads may share them: a table is complete before it is
    published. (The event's entries are not shared: see `PairForms.converted`.)"""
    global _held, _singles
    table = _entries.get((key, count))
    if table is not None:
        return table
    singles = _singles
    if len(singles) < count:
        singles = _singles = list(zip(range(max(count, 2 * len(singles)))))
    table = tuple(zip(repeat(key, count), singles[:count], strict=True))
    if count <= ENTRY_BUDGET:
        while _held + count > ENTRY_BUDGET and _entries:
            _held -= len(_entries.pop(next(iter(_entries)), ()))
        _entries[(key, count)] = table
        _held += count
    return table


def _reorder(order: list[int]) -> Reorder | None:
    """A sequence's items in `order` (None: `order` keeps them where they are)."""
    return None if order == sorted(order) else itemgetter(*order)


class _Layout:
    """What converting one list of topics costs once, whoever's list it is: members with the
    same subscription hold the same topics, so a 10,000-member group has a handful of them."""

    __slots__ = ("names", "reorder", "tables")

    def __init__(
        self, reorder: Reorder | None, tables: list[Sequence[Any]], names: tuple[str, ...] = ()
    ) -> None:
        #: the items of this form in the other form's order (None: the same order)
        self.reorder = reorder
        #: per topic, in the other form's order: what partition `p` becomes there (`owned`: the
        #: assignor's shared pairs; `assignment`: the record's shared entries)
        self.tables = tables
        #: for `converted`: the topics' names in the record's (id) order
        self.names = names


class _Tables(dict[str, tuple[TopicPartition, ...]]):
    """topic id -> its shared (name, partition) tuples, built on first use (a `KeyError` for a
    topic the metadata no longer has)."""

    def __init__(self, names: dict[str, str], counts: dict[str, int]) -> None:
        super().__init__()
        self._names, self._counts = names, counts

    def __missing__(self, topic_id: str) -> tuple[TopicPartition, ...]:
        table = self[topic_id] = topic_pairs(self._names[topic_id], self._counts[topic_id])
        return table


class PairForms:
    """Conversions for one topic metadata snapshot (one target computation)."""

    __slots__ = (
        "_counts",
        "_ids",
        "_names",
        "_owned_layouts",
        "_rank",
        "_result_layouts",
        "_tables",
    )

    def __init__(self, metadata: TopicMetadata) -> None:
        topics = sorted(metadata.topics.values(), key=lambda t: t.name)
        self._ids = {t.name: t.topic_id for t in topics}
        self._names = {t.topic_id: t.name for t in topics}
        self._counts = {t.topic_id: t.partitions for t in topics}
        #: topic id -> its place in name order (the assignors' order)
        self._rank = {t.topic_id: n for n, t in enumerate(topics)}
        self._tables = _Tables(self._names, self._counts)
        #: topic ids of a record's target (one partition each) -> how it becomes owned pairs
        self._owned_layouts: dict[tuple[str, ...], _Layout] = {}
        #: topic names of an assignor's result (one partition each) -> how it becomes a record
        self._result_layouts: dict[tuple[str, ...], _Layout] = {}

    def owned(self, target: Assignment) -> tuple[list[TopicPartition], bool]:
        """A record's target as the assignor's owned pairs (the shared tuples of
        `assignors.pairs`), in name order, without topics or partition numbers that no longer
        exist; and whether nothing was left out."""
        try:
            if set(map(len, map(_second, target))) <= {1}:
                ids = tuple(map(_first, target))
                layout = self._owned_layouts.get(ids) or self._owned_layout(ids)
                ordered = target if layout.reorder is None else layout.reorder(target)
                partitions = map(_first, map(_second, ordered))
                return list(map(getitem, layout.tables, partitions)), True
        except (KeyError, IndexError):  # a topic deleted, or shrunk below a partition
            pass
        return self._owned_slowly(target)

    def _owned_layout(self, ids: tuple[str, ...]) -> _Layout:
        ranks = list(map(self._rank.__getitem__, ids))
        order = sorted(range(len(ranks)), key=ranks.__getitem__)
        tables: list[Sequence[Any]] = [self._tables[ids[n]] for n in order]
        layout = self._owned_layouts[ids] = _Layout(_reorder(order), tables)
        return layout

    def _owned_slowly(self, target: Assignment) -> tuple[list[TopicPartition], bool]:
        kept = sorted(((self._names[t], t, ps) for t, ps in target if t in self._names), key=_first)
        complete = len(kept) == len(target)
        owned: list[TopicPartition] = []
        for _, topic_id, partitions in kept:
            count, table = self._counts[topic_id], self._tables[topic_id]
            valid = [p for p in partitions if p < count]
            complete &= len(valid) == len(partitions)
            owned.extend(map(table.__getitem__, valid))
        return owned, complete

    def assignment(self, pairs: list[TopicPartition]) -> Assignment:
        """An assignor's sorted result in the records' form (by topic id)."""
        layout = self._result_layout(pairs)
        if layout is None:
            return self._assignment_slowly(pairs)
        ordered = pairs if layout.reorder is None else layout.reorder(pairs)
        return tuple(map(getitem, layout.tables, map(_second, ordered)))

    def converted(self, pairs: list[TopicPartition]) -> tuple[Assignment, list[Entry]]:
        """`assignment(pairs)` and its `named` form, in one pass for the usual shape."""
        layout = self._result_layout(pairs)
        if layout is None:
            assignment = self._assignment_slowly(pairs)
            return assignment, self.named(assignment)
        ordered = pairs if layout.reorder is None else layout.reorder(pairs)
        assignment = tuple(map(getitem, layout.tables, map(_second, ordered)))
        # The event's entries are new tuples, not shared ones: `marshal` (the event log's
        # hand-over) keeps a table of every object referenced more than once, and a million
        # shared entries made it several times slower (RESULTS.md: figures behind the code). Their
        # (p,) are shared.
        return assignment, list(zip(layout.names, map(_second, assignment), strict=True))

    def _result_layout(self, pairs: list[TopicPartition]) -> _Layout | None:
        """The layout of an assignor's result naming each topic once (None: some topic has
        several partitions)."""
        names = tuple(map(_first, pairs))
        layout = self._result_layouts.get(names)
        if layout is None and len(set(names)) == len(names):
            ids = list(map(self._ids.__getitem__, names))
            order = sorted(range(len(ids)), key=ids.__getitem__)
            records: list[Sequence[Any]] = [
                topic_entries(ids[n], self._counts[ids[n]]) for n in order
            ]
            layout = self._result_layouts[names] = _Layout(
                _reorder(order), records, tuple(names[n] for n in order)
            )
        return layout

    def _assignment_slowly(self, pairs: list[TopicPartition]) -> Assignment:
        return tuple(
            sorted(
                (self._ids[name], tuple(map(_second, run))) for name, run in groupby(pairs, _first)
            )
        )

    def named(self, assignment: Assignment) -> list[Entry]:
        """A record's assignment as the target event shows it: (topic name, partitions) in
        topic-id order, sharing the record's partition tuples."""
        names = map(self._names.__getitem__, map(_first, assignment))
        return list(zip(names, map(_second, assignment), strict=True))
