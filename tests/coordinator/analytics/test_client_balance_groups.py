"""Client-balance groups in `rebalance report`: a real `rebalance demo --protocol client-balance`
log (kept in `client_balance_demo_log/`) is read without a quarantined line, and the group-type
comparison gains a client-balance row whose figures match a plain-Python reading of the same
lines: no rebalances, a move for every registration that gives a partition a new holder, and
each node's wait from its join to its first registration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.pipeline import run_pipeline

pytestmark = pytest.mark.spark

HERE = Path(__file__).parent
CLIENT_BALANCE_LOG = HERE / "client_balance_demo_log" / "events-000001.jsonl"
CLASSIC_LOG = HERE / "demo_log" / "events-000001.jsonl"


def reference(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The client-balance row, computed line by line as the docstring of
    `coordinator.analytics.client_balance` defines it."""
    mine = sorted(
        (e for e in lines if e.get("group_type") == "client-balance"), key=lambda e: e["ts"]
    )
    holder: dict[tuple[str, str, int], str] = {}
    moved = 0
    joined: dict[tuple[str, str], int] = {}
    until: dict[tuple[str, str], int] = {}
    for e in mine:
        node = (e["group"], e["member"])
        if e["type"] == "partition_registered":
            key = (e["group"], e["topic"], e["topic_partition"])
            moved += holder.get(key) != e["member"]
            holder[key] = e["member"]
            until.setdefault(node, e["ts"])
        elif e["type"] == "member_joined":
            joined.setdefault(node, e["ts"])
        elif e["type"] in ("member_left", "member_expired"):
            until.setdefault(node, e["ts"])
    churn = sum(e["type"] in ("member_joined", "member_left", "member_expired") for e in mine)
    return {
        "groups": len({e["group"] for e in mine}),
        "churn_events": churn,
        "partitions_moved": moved,
        "member_seconds_without_partitions": sum(until[n] - t for n, t in joined.items()) / 1000,
    }


def test_the_comparison_has_a_client_balance_row(spark: SparkSession, tmp_path: Path) -> None:
    source = tmp_path / "events"
    source.mkdir()
    for log in (CLIENT_BALANCE_LOG, CLASSIC_LOG):
        (source / f"{log.parent.name}.jsonl").write_bytes(log.read_bytes())
    out = tmp_path / "out"
    counts = run_pipeline(spark, str(source), str(out), tmp_path / "report", show_progress=False)
    assert counts.quarantined == 0
    rows = {
        r["group_type"]: r.asDict() for r in spark.read.parquet(str(out / "protocols")).collect()
    }
    assert set(rows) == {"classic", "client-balance"}
    row = rows["client-balance"]
    lines = [json.loads(line) for line in CLIENT_BALANCE_LOG.read_text().splitlines()]
    expected = reference(lines)
    assert expected["partitions_moved"] > expected["groups"]  # the story moves partitions
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert (row["rebalances"], row["completed"], row["duration_p50_ms"]) == (0, 0, None)
    assert row["partitions_moved_per_churn_event"] == pytest.approx(
        expected["partitions_moved"] / expected["churn_events"]
    )
    assert 'id="protocols"' in (tmp_path / "report" / "index.html").read_text()
