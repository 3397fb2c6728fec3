"""The Spark job against the plain-Python reading of the documentation (`reference_episodes.py`), on
generated awkward logs (`messy_log.py`) split over two rotated files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from messy_log import messy_log, write_rotated
from pyspark.sql import SparkSession
from reference_episodes import episodes as reference_episodes
from reference_episodes import group_metrics as reference_metrics

from coordinator.analytics.episodes import build_episodes
from coordinator.analytics.load import load_events, resolve_input
from coordinator.analytics.metrics import group_activity, group_metrics

pytestmark = pytest.mark.spark

FLOAT_COLUMNS = {"rebalances_per_hour", "duration_p50_ms", "duration_p95_ms", "duration_p99_ms"}


def _normalised(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: pytest.approx(v) if k in FLOAT_COLUMNS and v is not None else v for k, v in row.items()
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_spark_matches_the_reference(spark: SparkSession, tmp_path: Path, seed: int) -> None:
    log = messy_log(seed)
    loaded = load_events(spark, resolve_input(str(write_rotated(log, tmp_path))))
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
