"""The assignor sweep on a tiny grid, end to end on the shared local session."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.cli import main
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


def test_bad_grid_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "--out", "x", "--members", "10,ten"])
    assert exit_info.value.code == 2
    assert "not a list of integers" in capsys.readouterr().err


def test_unwritable_out_is_a_usage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["sweep", "--out", str(blocker / "sub")]) == 2
