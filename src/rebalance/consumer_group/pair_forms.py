"""An assignment's three forms around a server assignor, converted fast.

The assignors speak sorted lists of (topic name, partition) pairs; the consumer group's records
speak topic ids (`Assignment`: sorted (topic id, sorted partitions) tuples); the target event
speaks [[topic name, [partitions]]]. A 10,000-member group over a million partitions usually
gives each member one partition of each of 100 topics, so a conversion walks a million
(member, topic) entries per target: at a Python-level step of ~0.5 us each that is the bulk of
the target's cost. Here each conversion is a few passes of C-level `map`/`zip`/`sorted` for that
shape (one partition per topic), with a general per-topic path for the rest; both give the same
result (`tests/rebalance/test_consumer_group_pair_forms.py`).
"""

from __future__ import annotations

from itertools import groupby
from operator import getitem, itemgetter

from assignors import TopicPartition
from assignors.pairs import topic_pairs
from rebalance.consumer_group.group import TopicMetadata
from rebalance.consumer_group.records import Assignment

_first = itemgetter(0)
_second = itemgetter(1)


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

    __slots__ = ("_counts", "_ids", "_names", "_rank", "_tables")

    def __init__(self, metadata: TopicMetadata) -> None:
        topics = sorted(metadata.topics.values(), key=lambda t: t.name)
        self._ids = {t.name: t.topic_id for t in topics}
        self._names = {t.topic_id: t.name for t in topics}
        self._counts = {t.topic_id: t.partitions for t in topics}
        #: topic id -> its place in name order (the assignors' order)
        self._rank = {t.topic_id: n for n, t in enumerate(topics)}
        self._tables = _Tables(self._names, self._counts)

    def owned(self, target: Assignment) -> tuple[list[TopicPartition], bool]:
        """A record's target as the assignor's owned pairs (the shared tuples of
        `assignors.pairs`), in name order, without topics or partition numbers that no longer
        exist; and whether nothing was left out."""
        try:
            ranks = list(map(self._rank.__getitem__, map(_first, target)))
            order = sorted(range(len(ranks)), key=ranks.__getitem__)
            ordered = list(map(target.__getitem__, order))
            if set(map(len, map(_second, ordered))) <= {1}:
                tables = map(self._tables.__getitem__, map(_first, ordered))
                return list(map(getitem, tables, map(_first, map(_second, ordered)))), True
        except (KeyError, IndexError):  # a topic deleted, or shrunk below a partition
            pass
        return self._owned_slowly(target)

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
        names = list(map(_first, pairs))
        if len(set(names)) == len(names):  # one partition per topic: no grouping needed
            singles = zip(map(_second, pairs), strict=True)  # (p,) tuples
            return tuple(sorted(zip(map(self._ids.__getitem__, names), singles, strict=True)))
        return tuple(
            sorted(
                (self._ids[name], tuple(map(_second, run))) for name, run in groupby(pairs, _first)
            )
        )

    def named(self, assignment: Assignment) -> list[tuple[str, tuple[int, ...]]]:
        """A record's assignment as the target event shows it: (topic name, partitions) in
        topic-id order, sharing the record's partition tuples."""
        names = map(self._names.__getitem__, map(_first, assignment))
        return list(zip(names, map(_second, assignment), strict=True))
