"""The sweep as one job: rows to Parquet, the summary from them, then the plot.

The rows are written once and read back, so the assignors run a single time; everything after
that reads Parquet and collects only the summary, the per-size medians and the skip notes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from coordinator.analytics.progress import spark_progress
from coordinator.analytics.sweep import PEER_MAX_PARTITIONS, sweep
from coordinator.analytics.sweep_group import Scenario
from coordinator.analytics.sweep_plot import write_plot
from coordinator.analytics.sweep_summary import compute_by_size, notes, ordered, summarize


@dataclass(frozen=True)
class SweepOutputs:
    """Where the job wrote its outputs, and the small results the CLI prints."""

    rows: int
    sweep_dir: Path
    summary_dir: Path
    plot: Path
    summary: list[Any]
    notes: list[str]


def run_sweep_job(
    spark: SparkSession,
    scenarios: list[Scenario],
    names: list[str],
    out: Path,
    *,
    churn: int,
    peers: bool = True,
    peer_max_partitions: int = PEER_MAX_PARTITIONS,
    progress: bool = True,
) -> SweepOutputs:
    """Run the grid and write `out/sweep`, `out/sweep_summary` and `out/sweep.png`."""
    context = spark.sparkContext
    sweep_dir, summary_dir, plot = out / "sweep", out / "sweep_summary", out / "sweep.png"
    frame = sweep(
        spark, scenarios, names, churn, peers=peers, peer_max_partitions=peer_max_partitions
    )
    with spark_progress(context, f"sweep: {len(scenarios)} scenarios", enabled=progress):
        frame.write.mode("overwrite").parquet(str(sweep_dir))
    rows = spark.read.parquet(str(sweep_dir))
    with spark_progress(context, "sweep: summary and plot", enabled=progress):
        summarize(rows).coalesce(1).write.mode("overwrite").parquet(str(summary_dir))
        summary = ordered(spark.read.parquet(str(summary_dir))).collect()
        write_plot(summary, compute_by_size(rows).collect(), plot)
        problems = notes(rows)
        count = rows.count()
    return SweepOutputs(count, sweep_dir, summary_dir, plot, summary, problems)
