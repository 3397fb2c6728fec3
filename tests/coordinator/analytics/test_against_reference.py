"""The Spark job against the plain-Python reading of the documentation (`reference_episodes.py`,
`reference_ownership.py`), on generated awkward logs (`messy_log.py`) split over two rotated
files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from messy_log import messy_log, write_rotated
from pyspark.sql import Row, SparkSession
from reference_comparison import assert_episodes_match, assert_metrics_match
from reference_episodes import episodes as reference_episodes
from reference_episodes import group_metrics as reference_metrics
from reference_ownership import drawn_groups as reference_drawn_groups
from reference_ownership import ownership as reference_ownership

from coordinator.analytics.episodes import build_episodes
from coordinator.analytics.load import load_events, resolve_input
from coordinator.analytics.metrics import group_activity, group_metrics
from coordinator.analytics.ownership import build_ownership, member_notes
from coordinator.analytics.pipeline import run_pipeline

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("seed", [1, 2])
def test_spark_matches_the_reference(spark: SparkSession, tmp_path: Path, seed: int) -> None:
    log = messy_log(seed)
    loaded = load_events(spark, resolve_input(str(write_rotated(log, tmp_path))))
    episodes = build_episodes(loaded.events).orderBy("group", "episode").collect()
    expected = assert_episodes_match(episodes, log)
    outcomes = {e["outcome"] for e in expected}
    assert outcomes == {"completed", "empty", "superseded", "unfinished"}
    assert any(e["partitions_moved"] for e in expected)

    activity = group_activity(loaded.checked)
    metrics = group_metrics(activity, build_episodes(loaded.events))
    assert_metrics_match(metrics.collect(), log, expected)

    ownership = build_ownership(build_episodes(loaded.events), member_notes(loaded.events))
    order = ("group", "member", "start_ts", "start_episode", "kept")
    actual = [_as_dict(r) for r in ownership.orderBy(*order).collect()]
    wanted = reference_ownership(log, expected)
    assert len(actual) == len(wanted) > 50
    for got, row in zip(actual, wanted, strict=True):
        assert got == row, (got["group"], got["member"], got["start_ts"])
    # awkward cases are there: silent members cut, still held at the end (cooperative keeps are
    # rare in these logs: test_ownership.py has its own)
    assert {"last_heartbeat", None} <= {r["ended_by"] for r in wanted}
    assert any(r["client_id"] for r in wanted)


def test_the_pipeline_keeps_the_ownership_of_the_drawn_groups(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The pipeline's `ownership/` holds the reference's rows of the groups the report draws (the
    busiest, then those asked for that rebalanced), and no other group's."""
    log = messy_log(1, groups=60)  # a small log: this test is about the scope
    episodes = reference_episodes(log)
    metrics = reference_metrics(log, episodes)
    everything = reference_ownership(log, episodes)
    busiest = reference_drawn_groups(metrics, [])
    owned = {r["group"] for r in everything}
    # groups outside the busiest that have ownership rows (one asked for twice), one not in the log
    quiet = sorted(owned - set(busiest))[-3:]
    asked = [*quiet, "no-such-group", quiet[0]]
    drawn = reference_drawn_groups(metrics, asked)
    assert len(busiest) == 8 and drawn == [*busiest, *quiet]

    (tmp_path / "log").mkdir()
    out = tmp_path / "out"
    run_pipeline(spark, str(write_rotated(log, tmp_path / "log")), str(out), None,
                 show_progress=False, groups=asked)  # fmt: skip
    order = ("group", "member", "start_ts", "start_episode", "kept")
    table = spark.read.parquet(str(out / "ownership")).orderBy(*order).collect()
    wanted = [r for r in everything if r["group"] in drawn]
    assert set(quiet) <= {r["group"] for r in wanted} and len(everything) > len(wanted) > 10
    assert [_as_dict(r) for r in table] == wanted


def _as_dict(row: Row) -> dict[str, Any]:
    values = row.asDict()
    values["partitions"] = [(p["topic"], p["partition"]) for p in values["partitions"]]
    return values
