"""The uniform assignor's recent results, recalled when they come back as what members own.

A KIP-848 coordinator passes each member's current target as its owned partitions, so from one
epoch to the next the uniform assignor is handed, through `assignors.assign`, the very pairs it
returned last time. Decoding a million pairs back into partition indices (and normalising them
into tuples) was most of an epoch's cost (RESULTS.md, assignors beside Java). This module keeps
the `ClaimHint` of the last few runs (each member's result as a tuple and its indices) so that a
member whose owned pairs equal its recalled result takes the indices without a pair being read.

It is a memo, not group state: an entry is used only after an equality check against what the
caller passes (pointer comparisons when the pairs are the ones returned), so what is computed
never depends on it; only how fast. It holds at most `RECALL_BUDGET` partitions (oldest runs go
first). Threads may share it: entries are replaced whole, never edited.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from .spec import TopicPartition

if TYPE_CHECKING:  # numpy-based, built by the quota path that already imported it
    from .quota import ClaimHint

RECALL_BUDGET = 2_000_000
"""Most partitions the recalled results hold (two 1M-partition groups)."""

_recent: list[tuple[ClaimHint, int]] = []


def remember(hint: ClaimHint) -> None:
    """Keep ``hint`` (the newest) and drop the oldest beyond the budget."""
    global _recent
    size = sum(len(pairs) for pairs, _ in hint.members.values())
    if size > RECALL_BUDGET:
        return
    kept = [(hint, size)]
    held = size
    for old, old_size in _recent:
        if old.members.keys() == hint.members.keys() or held + old_size > RECALL_BUDGET:
            continue  # the same group's older epoch, or over budget
        kept.append((old, old_size))
        held += old_size
    _recent = kept


def hint_for(member_ids: Collection[str]) -> ClaimHint | None:
    """The newest recalled run that had one of ``member_ids`` (tried: a few of them)."""
    recent = _recent
    if not recent or not member_ids:
        return None
    probes = list(member_ids)[:: max(1, len(member_ids) // 4)][:4]
    for hint, _ in recent:
        if any(m in hint.members for m in probes):
            return hint
    return None


def recalled_pairs(
    member_id: str, owned: Sequence[TopicPartition]
) -> tuple[TopicPartition, ...] | None:
    """The recalled result of ``member_id`` if ``owned`` equals it (the tuple to use instead)."""
    for hint, _ in _recent:
        entry = hint.members.get(member_id)
        if entry is not None:
            pairs = entry[0]
            if len(pairs) == len(owned) and tuple(owned) == pairs:
                return pairs
            return None
    return None


def forget() -> None:
    """Drop every recalled run (benchmarks use it to time a run that recalls nothing)."""
    global _recent
    _recent = []
