"""The report job: load → episodes → group metrics, ownership → Parquet tables → HTML report.

The work is three scans of the log: one for the rebalance episodes, one for every group's
activity (which also counts the rejected lines), one of the membership events for each member's
client id, last heartbeat and leave; the ownership table is computed from the episodes and
those notes. The rejected lines themselves are collected by a fourth scan only when there are
some. The event table is never cached: its nested columns make Spark's in-memory cache slower
to build and to read than Parquet itself, and each scan reads only the columns it needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from coordinator.analytics import client_balance, consumer_groups
from coordinator.analytics.episodes import REBALANCE_EVENT_TYPES, build_episodes
from coordinator.analytics.group_pages import (
    MEMBER_EVENT_TYPES,
    drawn_groups,
    drawn_groups_flags,
)
from coordinator.analytics.load import load_events, quarantine_summary, resolve_input
from coordinator.analytics.metrics import group_activity, group_metrics
from coordinator.analytics.ownership import NOTE_TYPES, build_ownership, member_notes
from coordinator.analytics.progress import spark_progress
from coordinator.analytics.protocols import SCHEMA as PROTOCOLS_SCHEMA
from coordinator.analytics.protocols import (
    episode_type_count,
    episode_type_flags,
    protocol_comparison,
)
from coordinator.analytics.report import LogCounts, ReportInputs, write_report
from coordinator.analytics.zookeeper import RUN_EVENT_TYPES, zookeeper_episodes, zookeeper_runs
from coordinator.analytics.zookeeper_ownership import zookeeper_ownership
from coordinator.analytics.zookeeper_report import zookeeper_section

TABLES = ("episodes", "groups", "ownership", "protocols", "quarantine", "quarantine_summary")
EVENT_DERIVED_ROWS = (
    ("client_balance_events", client_balance.EVENT_TYPES, client_balance.client_balance_comparison),
    ("consumer_events", consumer_groups.EVENT_TYPES, consumer_groups.consumer_group_comparison),
)
"""Group types without episodes (client-balance groups never rebalance; KIP-848 groups reconcile
member by member): their row of the comparison comes from their own events, read only when the
log has some (the count is the `group_activity` column named first)."""
ZOOKEEPER_TABLES = ("zookeeper", "zookeeper_runs")
"""Written only when the log has events of ZooKeeper-coordinated groups."""


def _totals(activity: DataFrame) -> dict[str, int]:
    """The line accounting and the per-type event counts of `group_activity`, in one job:
    `valid` and `rejected` lines, and each `*_events` column summed over the valid rows."""
    valid = F.col("valid")
    counted = ["zookeeper_events", *(column for column, _, _ in EVENT_DERIVED_ROWS)]
    row = activity.agg(
        F.sum(F.when(valid, F.col("events"))).alias("valid"),
        F.sum(F.when(~valid, F.col("events"))).alias("rejected"),
        *(F.sum(F.when(valid, F.col(c))).alias(c) for c in counted),
    ).first()
    return {k: int(v or 0) for k, v in (row.asDict() if row is not None else {}).items()}


def run_pipeline(
    spark: SparkSession,
    events_path: str,
    out: str,
    report_dir: Path | None,
    *,
    show_progress: bool = True,
    partitions: bool = False,
    self_contained: bool = False,
    groups: Sequence[str] = (),
) -> LogCounts:
    """Write the Parquet tables under `out` and, if `report_dir` is given, the HTML report
    (with `partitions`, a per-partition view on each group page; `self_contained`, one file;
    `groups`, pages for these groups besides the busiest). The `ownership` table holds the
    groups that get a page (`drawn_groups`), whether or not the report is drawn."""
    source = resolve_input(events_path)
    loaded = load_events(spark, source)
    context = spark.sparkContext
    base = out.rstrip("/")
    with spark_progress(context, "building rebalance episodes", enabled=show_progress):
        rebalance_events = loaded.events_of(REBALANCE_EVENT_TYPES)
        # The group types the episodes make are observed on this write: no job of their own.
        seen_types = Observation("episode types")
        build_episodes(rebalance_events).observe(seen_types, *episode_type_flags()).write.mode(
            "overwrite"
        ).parquet(f"{base}/episodes")
        type_flags: dict[str, Any] | None = seen_types.get
    episodes = spark.read.parquet(f"{base}/episodes")
    activity = group_activity(loaded.checked).persist(StorageLevel.MEMORY_AND_DISK)
    sections: list[str] = []
    try:
        totals = _totals(activity)
        has_zookeeper = bool(totals["zookeeper_events"])
        if has_zookeeper:
            with spark_progress(context, "ZooKeeper groups", enabled=show_progress):
                _write_zookeeper_tables(spark, loaded.events_of(RUN_EVENT_TYPES), base)
            episodes = spark.read.parquet(f"{base}/episodes")
            type_flags = None  # ZooKeeper episodes were appended: count from the table
            if report_dir is not None:
                report_dir.mkdir(parents=True, exist_ok=True)
                sections.append(
                    zookeeper_section(
                        spark.read.parquet(f"{base}/zookeeper"),
                        spark.read.parquet(f"{base}/zookeeper_runs"),
                        report_dir,
                    )
                )
        with spark_progress(context, "computing group metrics", enabled=show_progress):
            # The drawn groups are picked by aggregates observed on this write.
            pick = Observation("drawn groups")
            group_metrics(activity, episodes).observe(pick, *drawn_groups_flags(groups)).write.mode(
                "overwrite"
            ).parquet(f"{base}/groups")
        with spark_progress(context, "computing partition ownership", enabled=show_progress):
            # Only the groups the report draws: the filter reaches the scans of the episodes and
            # of the membership events, so the table costs next to nothing on a large log.
            metrics = spark.read.parquet(f"{base}/groups")
            drawn_ids = drawn_groups(metrics, groups, pick.get)
            drawn = F.col("group").isin(drawn_ids)
            notes = member_notes(loaded.events_of(NOTE_TYPES).where(drawn))
            # The drawn groups' episodes are a few hundred rows: read in one task, so that the
            # window over each group's episodes needs no exchange (one stage fewer; the episodes
            # table is read whole either way, its nested columns decoded for every row).
            ownership = build_ownership(episodes.where(drawn).coalesce(1), notes)
            if has_zookeeper:
                runs = spark.read.parquet(f"{base}/zookeeper_runs").where(drawn)
                ownership = ownership.unionByName(zookeeper_ownership(runs, notes))
            ownership.write.mode("overwrite").parquet(f"{base}/ownership")
            derived = [d for d in EVENT_DERIVED_ROWS if totals[d[0]]]
            if len(derived) + episode_type_count(episodes, type_flags) > 1:
                protocols = protocol_comparison(activity, episodes)
                for _, types, comparison in derived:
                    row = comparison(loaded.events_of(types), activity)
                    protocols = protocols.unionByName(row).orderBy("group_type")
            else:
                # One group type (or none): nothing to compare, and the report shows no
                # comparison then; the table is written empty, in its columns, without planning
                # or running its aggregation (about seven stages: 1.8-2.8 JVM CPU-s at 1M events).
                # (A limited query, not `createDataFrame([])`, which runs Python workers.)
                typed = (F.lit(None).cast(f.dataType).alias(f.name) for f in PROTOCOLS_SCHEMA)
                protocols = spark.range(1).select(*typed).limit(0)
            protocols.write.mode("overwrite").parquet(f"{base}/protocols")
        valid, bad = totals["valid"], totals["rejected"]
    finally:
        activity.unpersist()
    with spark_progress(context, "quarantining bad lines", enabled=show_progress):
        # No rejected line: an empty table of the same columns, without scanning the log again.
        rejected = loaded.quarantine if bad else loaded.quarantine.limit(0)
        rejected.write.mode("overwrite").parquet(f"{base}/quarantine")
        quarantine = spark.read.parquet(f"{base}/quarantine")
        summary = quarantine_summary(quarantine)
        # Nothing rejected: the summary is empty, in its columns, without reading the table back.
        (summary if bad else summary.limit(0)).write.mode("overwrite").parquet(
            f"{base}/quarantine_summary"
        )
    counts = LogCounts(lines=valid + bad, events=valid, quarantined=bad)
    if report_dir is not None:
        with spark_progress(context, "drawing the report", enabled=show_progress):
            write_report(
                report_dir,
                counts,
                spark.read.parquet(f"{base}/groups"),
                episodes,
                spark.read.parquet(f"{base}/quarantine_summary"),
                sections=sections,
                inputs=ReportInputs(
                    spark.read.parquet(f"{base}/ownership"),
                    loaded.events_of(MEMBER_EVENT_TYPES),
                    spark.read.parquet(f"{base}/protocols"),
                    tuple(groups),
                    tuple(drawn_ids),
                ),
                partitions=partitions,
                self_contained=self_contained,
            )
    return counts


def _write_zookeeper_tables(spark: SparkSession, events: DataFrame, base: str) -> None:
    """The ZooKeeper runs and episodes tables; the episodes are appended to `episodes` in its
    schema, so every later stage (group metrics, plots) treats them like the others."""
    zookeeper_runs(events).write.mode("overwrite").parquet(f"{base}/zookeeper_runs")
    runs = spark.read.parquet(f"{base}/zookeeper_runs")
    episode_rows, table = zookeeper_episodes(runs)
    classic = spark.read.parquet(f"{base}/episodes").schema
    episode_rows.select(*(F.col(f.name).cast(f.dataType) for f in classic.fields)).write.mode(
        "append"
    ).parquet(f"{base}/episodes")
    table.write.mode("overwrite").parquet(f"{base}/zookeeper")
