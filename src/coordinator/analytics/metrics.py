"""Per-group summary of the log: how often a group rebalances, how long it takes, and why."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from coordinator.analytics.schema import PARTITION_EVENT_TYPES

TOP_TRIGGERS = 3
MS_PER_HOUR = 3_600_000
DURATION_QUANTILES = (0.5, 0.95, 0.99)
CHURN_EVENT_TYPES = ("member_joined", "member_left", "member_expired", "zk_session_expired")
"""Membership changes: what makes a group rebalance, whatever its protocol."""


def _count_of(event_type: str) -> Column:
    return F.sum((F.col("type") == event_type).cast("long"))


def group_activity(checked: DataFrame) -> DataFrame:
    """What each group did over the whole log, rebalances aside: one scan of `LoadedLog.checked`.

    One row per (`valid`, `group`): the valid rows give each group's activity, and events outside
    any group (partition loads) the row whose `group` is null; the rejected rows are counted in
    the same scan (their `group` is whatever the line said), so the line accounting needs no
    scan of its own.
    """
    # Partition loads concern no group. Logs written before the coordinator wrote null there
    # say "" (which is also a valid group id), so the type decides, not the field.
    group = F.when(~F.col("type").isin(*PARTITION_EVENT_TYPES), F.col("group"))
    return checked.groupBy("valid", group.alias("group")).agg(
        F.min("ts").alias("first_ts"),
        F.max("ts").alias("last_ts"),
        F.count(F.lit(1)).alias("events"),
        _count_of("offset_commit").alias("offset_commits"),
        _count_of("commit_fenced").alias("fenced_commits"),
        _count_of("member_expired").alias("expirations"),
        F.sum((F.col("group_type") == "zookeeper").cast("long")).alias("zookeeper_events"),
        F.sum((F.col("group_type") == "client-balance").cast("long")).alias(
            "client_balance_events"
        ),
        F.sum((F.col("group_type") == "consumer").cast("long")).alias("consumer_events"),
        F.sum(F.col("type").isin(*CHURN_EVENT_TYPES).cast("long")).alias("churn_events"),
    )


def _episode_summary(episodes: DataFrame) -> DataFrame:
    outcome = F.col("outcome")
    durations = F.percentile(F.col("duration_ms"), list(DURATION_QUANTILES))
    return (
        episodes.groupBy("group")
        .agg(
            F.count(F.lit(1)).alias("rebalances"),
            *(
                F.sum((outcome == name).cast("long")).alias(name)
                for name in ("completed", "superseded", "empty", "unfinished")
            ),
            durations.alias("q"),
            F.max("duration_ms").alias("duration_max_ms"),
            F.sum("partitions_moved").alias("partitions_moved"),
            F.sum("stop_the_world_total_ms").alias("stop_the_world_total_ms"),
        )
        .select(
            "*",
            *(
                F.col("q")[i].alias(f"duration_p{round(q * 100)}_ms")
                for i, q in enumerate(DURATION_QUANTILES)
            ),
        )
        .drop("q")
    )


def _top_triggers(episodes: DataFrame) -> DataFrame:
    counts = episodes.groupBy("group", "trigger").agg(F.count(F.lit(1)).alias("count"))
    # The `TOP_TRIGGERS` most frequent (ties by name) in one bounded aggregate (`min_by` with k;
    # the key is unique within a group): no window and no exchange for it.
    rank = F.struct(
        (-F.col("count")).alias("rank"), F.col("trigger").alias("trigger"), F.col("count")
    )
    return (
        counts.groupBy("group")
        .agg(F.sort_array(F.min_by(rank, rank, TOP_TRIGGERS)).alias("t"))
        .select(
            "group",
            F.transform("t", lambda t: F.struct(t["trigger"], t["count"])).alias("top_triggers"),
        )
    )


def group_metrics(activity: DataFrame, episodes: DataFrame) -> DataFrame:
    """One row per group seen in the log (columns in docs/analytics.md), from `group_activity`."""
    span_ms = F.col("last_ts") - F.col("first_ts")
    rate = F.when(span_ms > 0, F.col("rebalances") * F.lit(MS_PER_HOUR) / span_ms)
    zero_if_none = ("rebalances", "completed", "superseded", "empty", "unfinished")
    joined = (
        activity.where(F.col("valid") & F.col("group").isNotNull())
        .drop("valid")
        .join(_episode_summary(episodes), "group", "left")
        .join(_top_triggers(episodes), "group", "left")
        .fillna(0, subset=list(zero_if_none))
    )
    # Sorted by group in one file, as `orderBy` wrote it, without the sampling job of a range
    # partitioning: a row per group is small (2,408 rows at 1M events, 24,516 at 10M).
    return (
        joined.select(
            "group",
            "first_ts",
            "last_ts",
            "events",
            *zero_if_none,
            rate.alias("rebalances_per_hour"),
            "duration_p50_ms",
            "duration_p95_ms",
            "duration_p99_ms",
            "duration_max_ms",
            "partitions_moved",
            "stop_the_world_total_ms",
            "offset_commits",
            "fenced_commits",
            "expirations",
            F.coalesce(
                "top_triggers", F.array().cast("array<struct<trigger:string,count:bigint>>")
            ).alias("top_triggers"),
        )
        .coalesce(1)
        .sortWithinPartitions("group")
    )
