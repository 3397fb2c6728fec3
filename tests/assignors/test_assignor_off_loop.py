"""Assignments can run off the event loop: inputs, results and outcomes survive pickling, and a
worker thread computes what the caller would have computed inline."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import assignors
from assignors import StaticTopics, group_spec
from assignors.uniform import UniformAssignor


def test_specs_results_and_outcomes_pickle() -> None:
    topics = StaticTopics({"orders": 6, "payments": 3}, {("orders", 0): ["r1"]})
    spec = group_spec(
        {"a": ["orders", "payments"], "b": ["orders"]},
        owned={"a": [("orders", 0)]},
        generations={"a": 3},
        member_racks={"a": "r1"},
        instance_ids={"b": "i-b"},
    )
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert pickle.loads(pickle.dumps(topics)) == topics
    for name in ("range", "sticky", "cooperative-sticky", "uniform"):
        result = assignors.get(name).assign(spec, topics)
        assert pickle.loads(pickle.dumps(result)) == result
    outcome = UniformAssignor().assign_incremental(spec, topics)
    copied = pickle.loads(pickle.dumps(outcome))
    assert copied.assignment == outcome.assignment
    again = UniformAssignor().assign_incremental(spec, topics, copied)
    assert again.assignment == outcome.assignment


def test_a_worker_thread_computes_the_inline_result() -> None:
    names = [f"t{k}" for k in range(5)]
    subscriptions = {f"m{k:02d}": names for k in range(30)}
    partitions = dict.fromkeys(names, 40)
    inline = assignors.assign("uniform", subscriptions, partitions)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(assignors.assign, "uniform", subscriptions, partitions) for _ in range(4)
        ]
        assert all(f.result() == inline for f in futures)
