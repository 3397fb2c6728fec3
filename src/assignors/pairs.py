"""The (topic, partition) tuples of assignor results, built once per topic and shared.

An assignment of a million partitions is a million ``(topic, partition)`` tuples. Building them
is most of what a fresh assignment costs in Python (RESULTS.md, assignors), so each topic's tuples
are built once, kept in a bounded table and shared by every
result that names them. Tuples of strings and ints are immutable all the way down, so sharing
them cannot change a result; the table is a memo of a pure function of ``(topic, count)``, not
group state. It holds at most `PAIR_BUDGET` tuples; when a new topic would exceed it, the oldest
topics are dropped first (they are rebuilt on demand). Threads may share it: a table is built
completely before it is published, and two threads building the same one publish equal tables.
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import TYPE_CHECKING

from .spec import TopicPartition

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PAIR_BUDGET = 2_000_000
"""Most tuples the shared table keeps (about 64 bytes each, so about 130 MB at most)."""

_tables: dict[tuple[str, int], tuple[TopicPartition, ...]] = {}
_held = 0
_numbers: list[int] = []


def topic_pairs(topic: str, count: int) -> tuple[TopicPartition, ...]:
    """``((topic, 0), ..., (topic, count - 1))``, shared between calls while within budget."""
    global _held, _numbers
    key = (topic, count)
    table = _tables.get(key)
    if table is not None:
        return table
    numbers = _numbers
    if len(numbers) < count:
        # one int object per partition number, shared by every topic's tuples; replaced, never
        # extended in place, so a thread reading the old list is not disturbed
        numbers = _numbers = list(range(max(count, 2 * len(numbers))))
    table = tuple(zip(repeat(topic, count), numbers[:count], strict=True))
    if count <= PAIR_BUDGET:
        while _held + count > PAIR_BUDGET and _tables:
            _held -= len(_tables.pop(next(iter(_tables)), ()))
        _tables[key] = table
        _held += count
    return table


class PairTable:
    """Index <-> pair for one layout: topics in order, partitions ascending, indices dense."""

    def __init__(self, topics: list[str], counts: list[int]) -> None:
        self.topics = topics
        self.counts = counts
        # numpy is imported here, not at module level: only the large-group paths use it, and
        # a server that imports the assignors would otherwise carry it (22 MB) from the start.
        import numpy as np

        self.bases = np.zeros(len(topics), dtype=np.int64)
        if counts:
            self.bases[1:] = np.cumsum(counts[:-1])
        self.total = int(sum(counts))
        self._tables: list[tuple[TopicPartition, ...]] | None = None

    def tables(self) -> list[tuple[TopicPartition, ...]]:
        if self._tables is None:
            self._tables = [
                topic_pairs(t, c) for t, c in zip(self.topics, self.counts, strict=True)
            ]
        return self._tables

    def topic_of(self, indices: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        import numpy as np

        return np.searchsorted(self.bases, indices, side="right") - 1

    def all_pairs(self) -> list[TopicPartition]:
        """Every pair in index order."""
        return list(chain.from_iterable(self.tables()))

    def pairs(
        self, indices: npt.NDArray[np.int64], *, distinct_ascending: bool = False
    ) -> list[TopicPartition]:
        """The pairs of ``indices``, in the order given (``distinct_ascending``: the caller
        promises strictly ascending indices, so that all of them means every pair in order)."""
        if indices.size == 0:
            return []
        if distinct_ascending and indices.size == self.total:
            return self.all_pairs()
        topic = self.topic_of(indices)
        numbers = (indices - self.bases[topic]).tolist()
        if indices.size * 4 < self.total:
            names = self.topics
            return list(zip(map(names.__getitem__, topic.tolist()), numbers, strict=True))
        tables = self.tables()
        return list(map(tuple.__getitem__, map(tables.__getitem__, topic.tolist()), numbers))


def clear_pair_tables() -> None:
    """Forget every shared table (benchmarks use it to time a cold first assignment)."""
    global _held
    _tables.clear()
    _held = 0
