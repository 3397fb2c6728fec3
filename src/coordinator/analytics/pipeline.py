"""The report job: load → episodes → group metrics → Parquet tables → HTML report."""

from __future__ import annotations

from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import SparkSession

from coordinator.analytics.episodes import build_episodes
from coordinator.analytics.load import load_events, quarantine_summary, resolve_input
from coordinator.analytics.metrics import group_metrics
from coordinator.analytics.progress import spark_progress
from coordinator.analytics.report import LogCounts, write_report

TABLES = ("episodes", "groups", "quarantine", "quarantine_summary")


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
    events = loaded.events.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        base = out.rstrip("/")
        with spark_progress(context, "quarantining bad lines", enabled=show_progress):
            loaded.quarantine.write.mode("overwrite").parquet(f"{base}/quarantine")
        quarantine = spark.read.parquet(f"{base}/quarantine")
        with spark_progress(context, "building rebalance episodes", enabled=show_progress):
            build_episodes(events).write.mode("overwrite").parquet(f"{base}/episodes")
        episodes = spark.read.parquet(f"{base}/episodes")
        with spark_progress(context, "computing group metrics", enabled=show_progress):
            group_metrics(events, episodes).write.mode("overwrite").parquet(f"{base}/groups")
            quarantine_summary(quarantine).write.mode("overwrite").parquet(
                f"{base}/quarantine_summary"
            )
            valid = events.count()
        bad = quarantine.count()
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
    finally:
        events.unpersist()
