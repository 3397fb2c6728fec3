"""The assignor sweep on a tiny grid, end to end on the shared local session."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.sweep import sweep

SCENARIOS = [(4, 2, 6, "equal", 0, 1), (5, 3, 4, "mixed", 0, 2)]
NAMES = ["range", "roundrobin", "sticky"]


@pytest.mark.spark
def test_tiny_grid(spark: SparkSession, tmp_path: Path) -> None:
    frame = sweep(spark, SCENARIOS, NAMES, churn=4)
    frame.write.parquet(str(tmp_path / "sweep"))
    rows = spark.read.parquet(str(tmp_path / "sweep")).collect()
    assert len(rows) == len(SCENARIOS) * len(NAMES) * 5
    assert all(r["valid"] for r in rows)
    for r in rows:
        if r["subscriptions"] == "equal" and r["assignor"] == "sticky":
            assert r["moved"] == r["min_moves"]
        if r["subscriptions"] == "mixed" and r["step"] > 0:
            assert r["min_moves"] is None
