"""The Spark job against the plain-Python reading of the documentation (`reference_episodes.py`), on
generated awkward logs (`messy_log.py`) split over two rotated files."""

from __future__ import annotations

from pathlib import Path

import pytest
from messy_log import messy_log, write_rotated
from pyspark.sql import SparkSession
from reference_comparison import assert_episodes_match, assert_metrics_match

from coordinator.analytics.episodes import build_episodes
from coordinator.analytics.load import load_events, resolve_input
from coordinator.analytics.metrics import group_activity, group_metrics

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

    metrics = group_metrics(group_activity(loaded.checked), build_episodes(loaded.events))
    assert_metrics_match(metrics.collect(), log, expected)
