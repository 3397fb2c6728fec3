"""The receiving thread's cache of each member's target by topic name (the target event's
pieces), valid for the very assignment object each was made from: a result's whole named target
is then C-level passes plus Python work for the changed members only, where a Python step per
member held the interpreter lock far longer (RESULTS.md: figures behind the code)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_not, itemgetter

from rebalance.consumer_group.pair_forms import PairForms
from rebalance.consumer_group.records import Assignment
from rebalance.consumer_group.target import TargetInputs

NAMED_STEP = 100
"""Members whose named form is made between two pauses when paced (one short hold of the
interpreter lock)."""

Named = tuple[tuple[str, tuple[int, ...]], ...]

_first = itemgetter(0)


class NamedForms:
    """Per group, member id -> the assignment its named form was made from, and that form
    (members gone stay until the group is forgotten). One thread only writes it."""

    def __init__(self) -> None:
        self._groups: dict[str, tuple[dict[str, Assignment], dict[str, Named]]] = {}

    def by_name(
        self, inputs: TargetInputs, changed: dict[str, Assignment], *, pause_s: float = 0.0
    ) -> dict[str, Sequence[tuple[str, tuple[int, ...]]]]:
        """The whole target of `inputs` with `changed` over its targets, by topic name, as
        `compute_target` gives it: every member in id order. ``pause_s``: sleep that long every
        `NAMED_STEP` members made (priming, which nobody waits for)."""
        made, named = self._groups.setdefault(inputs.group_id, ({}, {}))
        ids = sorted(map(_first, inputs.members))
        now = dict(inputs.targets)
        now.update(changed)
        assignments = list(map(now.get, ids, repeat(())))
        stale = list(compress(ids, map(is_not, map(made.get, ids), assignments)))
        if stale:
            forms = PairForms(inputs.metadata)
            for n, member_id in enumerate(stale, 1):
                if pause_s and n % NAMED_STEP == 0:
                    time.sleep(pause_s)
                assignment = now.get(member_id, ())
                made[member_id] = assignment
                # a tuple: once the collector has seen that its items are all atomic it stops
                # tracking it, so a full collection does not walk a million cached pairs
                named[member_id] = tuple(forms.named(assignment))
        return dict(zip(ids, map(named.__getitem__, ids), strict=True))

    def made_from(self, group_id: str) -> dict[str, Assignment]:
        """Member id -> the assignment object its cached named form was made from."""
        made, _ = self._groups.get(group_id, ({}, {}))
        return made

    def forget(self, group_id: str) -> None:
        self._groups.pop(group_id, None)
