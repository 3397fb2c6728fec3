"""The Spark job against the plain-Python reading of the documentation (`reference_episodes.py`), on
generated logs meant to be awkward: events out of order and sharing milliseconds across two
rotated files, endings followed by stray events, rebalances superseded or never finished, logs
that start mid-life, duplicate owners, non-consumer groups and cooperative protocols."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from reference_episodes import episodes as reference_episodes
from reference_episodes import group_metrics as reference_metrics

from coordinator.analytics.episodes import build_episodes
from coordinator.analytics.load import load_events, resolve_input
from coordinator.analytics.metrics import group_activity, group_metrics

pytestmark = pytest.mark.spark

GROUPS = 400
TYPES = [
    ("rebalance_started", 6), ("join_completed", 5), ("sync_completed", 5), ("group_stable", 5),
    ("group_empty", 1), ("offset_commit", 3), ("commit_fenced", 1), ("member_expired", 1),
    ("member_joined", 1),
]  # fmt: skip
FLOAT_COLUMNS = {"rebalances_per_hour", "duration_p50_ms", "duration_p95_ms", "duration_p99_ms"}


def _assignments(rng: random.Random, members: list[str]) -> dict[str, Any]:
    if rng.random() < 0.1:  # a non-consumer protocol: opaque bytes, no entries
        return dict.fromkeys(members)
    topics = ["a", "b"] if rng.random() < 0.5 else ["a"]
    result: dict[str, Any] = {m: [] for m in members}
    for topic in topics:
        for p in range(rng.randint(0, 5)):
            owners = rng.sample(members, 2) if rng.random() < 0.05 and len(members) > 1 else None
            for owner in owners or [rng.choice(members)]:
                entries = result[owner]
                entry = next((e for e in entries if e[0] == topic), None)
                if entry is None:
                    entry = [topic, []]
                    entries.append(entry)
                entry[1].append(p)
    return result


def _group_events(rng: random.Random, group: str) -> list[dict[str, Any]]:
    names, weights = zip(*TYPES, strict=True)
    protocol = rng.choice(["range", "cooperative-sticky", "roundrobin"])
    pool = [f"{group}-m{i}" for i in range(rng.randint(1, 4))]
    ts = rng.randrange(1_000, 100_000)
    generation = rng.choice([0, 0, 3])  # 3: a log that starts mid-life
    events: list[dict[str, Any]] = []
    for _ in range(rng.randint(0, 25)):
        kind = rng.choices(names, weights)[0]
        ts += rng.choice([0, 0, 1, 7, 50, 400, -30])  # ties and the odd step back in time
        event: dict[str, Any] = {"v": 1, "ts": ts, "node": 1, "type": kind, "group": group}
        members = rng.sample(pool, rng.randint(1, len(pool)))
        if kind == "rebalance_started":
            event |= {"generation": generation, "trigger": rng.choice(["member_joined", "x"])}
            event["members"] = rng.randint(0, 4)
        elif kind == "join_completed":
            generation += 1
            event |= {"generation": generation, "leader": members[0], "protocol": protocol}
            event["members"] = members + ([members[0]] if rng.random() < 0.05 else [])
        elif kind == "sync_completed":
            event |= {"generation": generation, "assignments": _assignments(rng, members)}
        elif kind in ("group_stable", "group_empty"):
            event["generation"] = generation
        elif kind == "offset_commit":
            event |= {"member": members[0], "partitions": 1}
        elif kind == "commit_fenced":
            event |= {"member": members[0], "error": "ILLEGAL_GENERATION", "code": 22}
        else:
            event |= {"member": members[0], "reason": "session_timeout"}
        events.append(event)
    return events


def _log(seed: int) -> list[dict[str, Any]]:
    """Groups interleaved line by line, with a partition event now and then (no group)."""
    rng = random.Random(seed)
    streams = [_group_events(rng, f"g{i:03d}") for i in range(GROUPS)]
    log: list[dict[str, Any]] = []
    while any(streams):
        stream = rng.choice([s for s in streams if s])
        log.append(stream.pop(0))
        if rng.random() < 0.01:  # older logs say "" for the group of a partition event
            log.append({"v": 1, "ts": 5, "node": 1, "type": "partition_loaded", "partition": 0,
                        "groups": 3, "group": rng.choice([None, ""])})  # fmt: skip
    return log


def _normalised(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: pytest.approx(v) if k in FLOAT_COLUMNS and v is not None else v for k, v in row.items()
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_spark_matches_the_reference(spark: SparkSession, tmp_path: Path, seed: int) -> None:
    log = _log(seed)
    half = len(log) // 2
    lines = [json.dumps(e) for e in log]
    (tmp_path / "events-0001.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (tmp_path / "events-0002.jsonl").write_text("\n".join(lines[half:]) + "\n")
    loaded = load_events(spark, resolve_input(str(tmp_path)))
    episodes = build_episodes(loaded.events).orderBy("group", "episode").collect()
    expected = reference_episodes(log)
    assert len(episodes) == len(expected) > 500
    for actual, wanted in zip(episodes, expected, strict=True):
        assert actual.asDict() == wanted, (actual["group"], actual["episode"])
    outcomes = {e["outcome"] for e in expected}
    assert outcomes == {"completed", "empty", "superseded", "unfinished"}
    assert any(e["partitions_moved"] for e in expected)

    metrics = group_metrics(group_activity(loaded.checked), build_episodes(loaded.events))
    actual_groups = []
    for row in metrics.collect():
        values = row.asDict()
        values["top_triggers"] = [(t["trigger"], t["count"]) for t in values["top_triggers"]]
        actual_groups.append(values)
    assert actual_groups == [_normalised(r) for r in reference_metrics(log, expected)]
