"""The uniform assignor's recalled results (`assignors.recall`) change how fast, never what.

Epoch after epoch through `assignors.assign`, each handed the previous result as owned: with the
recall and with it forgotten before every call, the results are the same; a result the caller
edited before handing it back is not taken for the recalled one.
"""

from __future__ import annotations

import assignors
from assignors import recall

TOPICS = [f"t{k}" for k in range(4)]
PARTITIONS = dict.fromkeys(TOPICS, 100)  # 400: the quota path, which keeps hints


def _epochs(forget: bool) -> list[assignors.GroupAssignment]:
    members = {f"m{i:02d}": TOPICS for i in range(30)}
    owned: assignors.GroupAssignment = {}
    results = []
    for change in ("fresh", "leave", "join", "edited", "grown"):
        if change == "leave":
            members.pop("m03")
        elif change == "join":
            members["m99"] = TOPICS
        elif change == "edited":
            owned["m05"].append(owned["m06"].pop())  # the caller moved one partition itself
        partitions = {**PARTITIONS, "t0": 130} if change == "grown" else PARTITIONS
        if forget:
            recall.forget()
        result = assignors.assign(
            "uniform", members, partitions, owned={m: owned[m] for m in members if m in owned}
        )
        results.append({m: list(tps) for m, tps in result.items()})
        owned = result
    return results


def test_recalled_runs_give_the_same_results_as_fresh_decoding() -> None:
    recall.forget()
    assert _epochs(forget=False) == _epochs(forget=True)


def test_a_member_whose_owned_pairs_differ_from_its_result_is_decoded() -> None:
    recall.forget()
    first = assignors.assign("uniform", {"a": TOPICS, "b": TOPICS}, PARTITIONS)
    assert recall.recalled_pairs("a", first["a"]) == tuple(first["a"])
    assert recall.recalled_pairs("a", first["a"][:-1]) is None
    assert recall.recalled_pairs("a", [list(tp) for tp in first["a"]]) is None
