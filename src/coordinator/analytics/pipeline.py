"""The report job: load → episodes → group metrics → Parquet tables → HTML report.

The work is two scans of the log: one for the rebalance episodes, one for every group's activity
(which also counts the rejected lines). The rejected lines themselves are collected by a third
scan only when there are some. The event table is never cached: its nested columns make Spark's
in-memory cache slower to build and to read than Parquet itself, and each scan reads only the
columns it needs.
"""

from __future__ import annotations

from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from coordinator.analytics.episodes import REBALANCE_EVENT_TYPES, build_episodes
from coordinator.analytics.load import load_events, quarantine_summary, resolve_input
from coordinator.analytics.metrics import group_activity, group_metrics
from coordinator.analytics.progress import spark_progress
from coordinator.analytics.report import LogCounts, write_report

TABLES = ("episodes", "groups", "quarantine", "quarantine_summary")


def _total(frame: DataFrame, column: str) -> int:
    """Sum of a column of a small table (0 when it has no rows)."""
    row = frame.agg(F.sum(column)).first()
    return int(row[0] or 0) if row is not None else 0


def run_pipeline(
    spark: SparkSession,
    events_path: str,
    out: str,
    report_dir: Path | None,
    *,
    show_progress: bool = True,
) -> LogCounts:
    """Write the Parquet tables under `out` and, if `report_dir` is given, the HTML report."""
    source = resolve_input(events_path)
    loaded = load_events(spark, source)
    context = spark.sparkContext
    base = out.rstrip("/")
    with spark_progress(context, "building rebalance episodes", enabled=show_progress):
        rebalance_events = loaded.events_of(REBALANCE_EVENT_TYPES)
        build_episodes(rebalance_events).write.mode("overwrite").parquet(f"{base}/episodes")
    episodes = spark.read.parquet(f"{base}/episodes")
    activity = group_activity(loaded.checked).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with spark_progress(context, "computing group metrics", enabled=show_progress):
            group_metrics(activity, episodes).write.mode("overwrite").parquet(f"{base}/groups")
        valid = _total(activity.where(F.col("valid")), "events")
        bad = _total(activity.where(~F.col("valid")), "events")
    finally:
        activity.unpersist()
    with spark_progress(context, "quarantining bad lines", enabled=show_progress):
        # No rejected line: an empty table of the same columns, without scanning the log again.
        rejected = loaded.quarantine if bad else loaded.quarantine.limit(0)
        rejected.write.mode("overwrite").parquet(f"{base}/quarantine")
        quarantine = spark.read.parquet(f"{base}/quarantine")
        quarantine_summary(quarantine).write.mode("overwrite").parquet(f"{base}/quarantine_summary")
    counts = LogCounts(lines=valid + bad, events=valid, quarantined=bad)
    if report_dir is not None:
        with spark_progress(context, "drawing the report", enabled=show_progress):
            write_report(
                report_dir,
                counts,
                spark.read.parquet(f"{base}/groups"),
                episodes,
                spark.read.parquet(f"{base}/quarantine_summary"),
            )
    return counts
