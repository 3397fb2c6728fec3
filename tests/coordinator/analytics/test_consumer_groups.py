"""KIP-848 consumer groups in `rebalance report`: a real `rebalance demo --protocol consumer` log
(kept in `consumer_demo_log/`) is read without a quarantined line, and the group-type
comparison gains a consumer row whose figures match a plain-Python reading of the same lines, as
`coordinator.analytics.consumer_groups` defines them: a rebalance per target assignment, from the
first epoch bump it covers until every member of the target reported stable at its epoch; moves
from one target to the next; each member's wait from its join to its first partitions."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from reference_episodes import compared_types
from reference_episodes import episodes as reference_episodes

from coordinator.analytics.metrics import CHURN_EVENT_TYPES
from coordinator.analytics.pipeline import run_pipeline
from coordinator.analytics.protocols import COLUMNS, SCHEMA

pytestmark = pytest.mark.spark

HERE = Path(__file__).parent
CONSUMER_LOG = HERE / "consumer_demo_log" / "events-000001.jsonl"
CLASSIC_LOG = HERE / "demo_log" / "events-000001.jsonl"
COOPERATIVE_LOG = HERE / "cooperative_demo_log" / "events-000001.jsonl"


def reference(lines: list[dict[str, Any]]) -> dict[str, Any]:
    mine = sorted((e for e in lines if e.get("group_type") == "consumer"), key=lambda e: e["ts"])
    targets = [e for e in mine if e["type"] == "target_assignment"]
    bumps = [e for e in mine if e["type"] == "group_epoch_bumped"]
    durations: list[int] = []
    completed = moved = 0
    owner: dict[tuple[str, str, int], str] = {}
    last_epoch: dict[str, int] = {}
    for target in sorted(targets, key=lambda t: (t["group"], t["generation"])):
        group, epoch = target["group"], target["generation"]
        covered = [b["ts"] for b in bumps if b["group"] == group
                   and last_epoch.get(group, 0) < b["generation"] <= epoch]  # fmt: skip
        last_epoch[group] = epoch
        start = min(covered, default=target["ts"])
        reached = {}
        for e in mine:
            if (e["type"] == "member_reconciled" and e["group"] == group
                    and e["member_state"] == "stable" and e["generation"] == epoch
                    and e.get("target_epoch") == epoch):  # fmt: skip
                reached.setdefault(e["member"], e["ts"])
        if set(target["assignments"]) <= set(reached):
            completed += 1
            ends = [reached[m] for m in target["assignments"]]
            durations.append(max([*ends, target["ts"]]) - start)
        for member, entries in target["assignments"].items():
            for topic, partitions in entries:
                for p in partitions:
                    moved += owner.get((group, topic, p)) != member
                    owner[group, topic, p] = member
    joined: dict[tuple[str, str], int] = {}
    until: dict[tuple[str, str], int] = {}
    for e in mine:
        who = (e["group"], e["member"])
        if e["type"] == "member_joined":
            joined.setdefault(who, e["ts"])
        elif e["type"] in ("member_left", "member_expired") or (
            e["type"] == "member_reconciled" and e["assigned"] > 0
        ):
            until.setdefault(who, e["ts"])
    churn = sum(e["type"] in ("member_joined", "member_left", "member_expired") for e in mine)
    return {
        "groups": len({e["group"] for e in mine}),
        "churn_events": churn,
        "rebalances": len(targets),
        "completed": completed,
        "duration_p50_ms": statistics.median(durations),
        "partitions_moved": moved,
        "member_seconds_without_partitions": sum(until[w] - t for w, t in joined.items()) / 1000,
    }


def cooperative_reference(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The comparison's figures for the one classic group of `lines`, from its episodes."""
    episodes = reference_episodes(lines)
    durations = [e["duration_ms"] for e in episodes if e["duration_ms"] is not None]
    return {
        "groups": 1,
        "churn_events": sum(e["type"] in CHURN_EVENT_TYPES for e in lines),
        "rebalances": len(episodes),
        "completed": sum(e["outcome"] == "completed" for e in episodes),
        "duration_p50_ms": statistics.median(durations),
        "partitions_moved": sum(e["partitions_moved"] or 0 for e in episodes),
        "member_seconds_without_partitions": sum(e["stop_the_world_total_ms"] for e in episodes)
        / 1000,
    }


def test_the_comparison_has_consumer_and_cooperative_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = tmp_path / "events"
    source.mkdir()
    # The classic demos' logs beside it: their groups get other names than the consumer demo's
    # (a log from one coordinator never holds two groups of one name).
    (source / "consumer.jsonl").write_bytes(CONSUMER_LOG.read_bytes())
    for name, log in (("classic", CLASSIC_LOG), ("cooperative", COOPERATIVE_LOG)):
        text = log.read_text().replace('"group":"demo-billing"', f'"group":"{name}-billing"')
        (source / f"{name}.jsonl").write_text(text)
    out = tmp_path / "out"
    counts = run_pipeline(spark, str(source), str(out), None, show_progress=False)
    assert counts.quarantined == 0
    table = spark.read.parquet(str(out / "protocols"))
    assert table.schema == SCHEMA  # the schema the pipeline writes when it skips the comparison
    rows = {r["group_type"]: r.asDict() for r in table.collect()}
    assert set(rows) == {"classic", "classic-cooperative", "consumer"}
    classic_lines = [
        json.loads(line)
        for name in ("classic", "cooperative")
        for line in (source / f"{name}.jsonl").read_text().splitlines()
    ]
    assert set(rows) == compared_types(reference_episodes(classic_lines), ["consumer"])
    lines = [json.loads(line) for line in CONSUMER_LOG.read_text().splitlines()]
    expected = reference(lines)
    # The demo's story: targets some member never reached (the last one's member left first).
    assert 0 < expected["completed"] < expected["rebalances"]
    assert {k: rows["consumer"][k] for k in expected} == pytest.approx(expected)

    cooperative = [json.loads(line) for line in COOPERATIVE_LOG.read_text().splitlines()]
    expected = cooperative_reference(cooperative)
    assert {k: rows["classic-cooperative"][k] for k in expected} == pytest.approx(expected)
    # The story, as the log tells it: once the group formed, dave's join took two rebalances
    # (the others revoke what moves, then dave gets it) and only dave waited; bob's leave and
    # carol's expiry stopped nobody. Eager members all wait at every one of those.
    waited = [
        (e["trigger"], sorted(m.split("-")[0] for m, ms in e["stop_the_world_ms"].items() if ms))
        for e in reference_episodes(cooperative)[1:]
        if e["outcome"] == "completed"
    ]
    assert waited == [("member_joined", ["dave"]), ("metadata_changed", ["dave"]),
                      ("member_left", []), ("member_expired", [])]  # fmt: skip
    assert (
        rows["classic-cooperative"]["member_seconds_without_partitions_per_churn_event"]
        < rows["classic"]["member_seconds_without_partitions_per_churn_event"]
    )


def test_one_group_type_writes_an_empty_comparison(spark: SparkSession, tmp_path: Path) -> None:
    """One group type: nothing to compare, so `protocols/` holds its columns and no row (the
    pipeline skips its aggregation), as the reference's rule says, and the report has no
    comparison section."""
    out = tmp_path / "out"
    run_pipeline(spark, str(CLASSIC_LOG), str(out), tmp_path / "report", show_progress=False)
    table = spark.read.parquet(str(out / "protocols"))
    assert table.columns == COLUMNS and table.schema == SCHEMA
    lines = [json.loads(line) for line in CLASSIC_LOG.read_text().splitlines()]
    assert {r["group_type"] for r in table.collect()} == compared_types(reference_episodes(lines))
    assert compared_types(reference_episodes(lines)) == set()
    assert 'id="protocols"' not in (tmp_path / "report" / "index.html").read_text()
