"""Rebalances of ZooKeeper-coordinated groups (`group_type` "zookeeper"), from their event log.

Nobody sees a ZooKeeper group's rebalance whole: each consumer logs its own. A consumer's *run*
goes from its `rebalance_started` to the first `zk_rebalance_completed`, `zk_rebalance_failed`
or `member_left` it writes after it ("open" if none: it crashed, or the log ends). The group's
*episode* is a maximal stretch of overlapping runs: it starts when the first consumer releases
its partitions and ends when the last one of that stretch has claimed (or given up), which is
when the assignment is complete again. Per episode:

* `episodes` rows (the columns of classic episodes, `generation`/`leader` null, `protocol` the
  assignment strategy): outcome "completed", "failed" (a consumer hit ConsumerRebalanceFailed)
  or "unfinished" (a run never ended); `partitions_moved` compares, for the consumers that
  rebalanced, what each held before its first run with what it claimed in its last (a
  partition of a consumer that died counts as moved); `stop_the_world_ms` is each consumer's
  time from its release to its claims (0.8 releases everything first);
* the `zookeeper` table: runs, attempts, failed claim rounds, retries, failures, ZooKeeper
  requests (the consumers count them), watch events folded into the runs, time without
  partitions (all consumers together) and the partitions of the subscribed topics;
* the `zookeeper_runs` table: one row per consumer run, what the report's run plot draws.

All of it is computed from the log alone, so a later side-by-side of group types can read the
same tables.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator.analytics.episodes import partitions_moved
from coordinator.analytics.schema import ASSIGNMENTS, ORDER_COLUMNS, TOPIC_PARTITIONS

GROUP_TYPE = "zookeeper"
RUN_EVENT_TYPES = (
    "rebalance_started",
    "zk_claims_failed",
    "zk_rebalance_retry",
    "zk_rebalance_completed",
    "zk_rebalance_failed",
    "member_left",
)
ENDS = {"zk_rebalance_completed": "completed", "zk_rebalance_failed": "failed",
        "member_left": "left"}  # fmt: skip


def _order_key() -> Column:
    return F.struct(*(F.col(c) for c in ORDER_COLUMNS))


def zookeeper_runs(events: DataFrame) -> DataFrame:
    """One row per consumer run (see the module docstring) from valid events."""
    in_member = Window.partitionBy("group", "member").orderBy(*ORDER_COLUMNS)
    so_far = in_member.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    kind = F.col("type")
    is_start = kind == "rebalance_started"
    is_end = kind.isin(*ENDS)
    numbered = (
        events.where((F.col("group_type") == GROUP_TYPE) & kind.isin(*RUN_EVENT_TYPES))
        .withColumn("run", F.sum(is_start.cast("int")).over(so_far))
        .where(F.col("run") > 0)
    )
    ending = F.struct(
        kind.alias("type"),
        F.col("ts").alias("ts"),
        F.col("attempt").alias("attempt"),
        F.col("assignments").alias("assignments"),
        F.col("consumers").alias("consumers"),
        F.col("partitions_total").alias("partitions_total"),
        F.col("zk_ops").alias("zk_ops"),
        F.col("strategy").alias("strategy"),
    )
    runs = numbered.groupBy("group", "member", "run").agg(
        F.min(F.when(is_start, F.col("ts"))).alias("start_ts"),
        F.first(F.when(is_start, F.col("trigger")), ignorenulls=True).alias("trigger"),
        F.first(F.when(is_start, F.col("member_count")), ignorenulls=True).alias("members_before"),
        F.first(F.when(is_start, F.col("watch_events")), ignorenulls=True).alias("watch_events"),
        F.min_by(ending, F.when(is_end, _order_key())).alias("end"),
        F.sum((kind == "zk_claims_failed").cast("int")).alias("failed_claim_rounds"),
        F.sum((kind == "zk_rebalance_retry").cast("int")).alias("retries"),
    )
    outcome = F.coalesce(
        F.element_at(F.create_map(*(F.lit(x) for pair in ENDS.items() for x in pair)),
                     F.col("end.type")),
        F.lit("open"),
    )  # fmt: skip
    mine = F.coalesce(F.col("end.assignments")[F.col("member")], F.array().cast(TOPIC_PARTITIONS))
    held_after = F.when(F.col("outcome") == "completed", mine).otherwise(
        F.array().cast(TOPIC_PARTITIONS)
    )
    previous_runs = Window.partitionBy("group", "member").orderBy("run")
    return (
        runs.withColumn("outcome", outcome)
        .withColumn("end_ts", F.col("end.ts"))
        .withColumn("held_after", held_after)
        .withColumn(
            "held_before",
            F.coalesce(
                F.lag("held_after").over(previous_runs), F.array().cast(TOPIC_PARTITIONS)
            ),
        )
        .select(
            "group", "member", "run", "start_ts", "end_ts", "outcome", "trigger",
            "members_before", "watch_events", "failed_claim_rounds", "retries",
            F.col("end.attempt").alias("attempts"), F.col("end.zk_ops").alias("zk_ops"),
            F.col("end.consumers").alias("consumers"),
            F.col("end.partitions_total").alias("partitions_total"),
            F.col("end.strategy").alias("strategy"), "held_before", "held_after",
        )
    )  # fmt: skip


def _with_episode_numbers(runs: DataFrame) -> DataFrame:
    """Number each group's maximal stretches of overlapping runs (gaps and islands)."""
    by_start = Window.partitionBy("group").orderBy("start_ts", "member", "run")
    effective_end = F.coalesce(F.col("end_ts"), F.col("start_ts"))
    latest_end_before = F.max(effective_end).over(
        by_start.rowsBetween(Window.unboundedPreceding, -1)
    )
    starts_episode = latest_end_before.isNull() | (F.col("start_ts") > latest_end_before)
    return runs.withColumn("effective_end", effective_end).withColumn(
        "episode",
        F.sum(starts_episode.cast("int")).over(
            by_start.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        ),
    )


def _count_partitions(assignments: Column) -> Column:
    return F.aggregate(
        F.map_values(assignments),
        F.lit(0),
        lambda total, entries: (
            total
            + F.coalesce(
                F.size(F.flatten(F.transform(entries, lambda e: e["partitions"]))), F.lit(0)
            )
        ),
    )


def zookeeper_episodes(runs: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(rows for the `episodes` table, the `zookeeper` table) from `zookeeper_runs`."""
    numbered = _with_episode_numbers(runs)
    waited = F.when(
        F.col("outcome").isin("completed", "failed"), F.col("end_ts") - F.col("start_ts")
    ).otherwise(F.lit(0).cast("long"))
    per_member = numbered.groupBy("group", "episode", "member").agg(
        F.min_by("held_before", "run").alias("before"),
        F.max_by("held_after", "run").alias("after"),
        F.sum(waited).alias("waited_ms"),
    )
    holdings = per_member.groupBy("group", "episode").agg(
        F.map_from_entries(F.collect_list(F.struct("member", "before"))).alias("before"),
        F.map_from_entries(F.collect_list(F.struct("member", "after"))).alias("after"),
        F.map_from_entries(F.collect_list(F.struct("member", "waited_ms"))).alias("waits"),
    )
    completed = F.col("outcome") == "completed"
    first = F.struct("start_ts", "trigger", "members_before", "strategy")
    summary = numbered.groupBy("group", "episode").agg(
        F.min("start_ts").alias("start_ts"),
        F.max("effective_end").alias("end_ts"),
        F.min_by(first, F.struct("start_ts", "member", "run")).alias("first"),
        F.max_by(F.when(completed, F.col("consumers")), F.when(completed, F.col("end_ts"))).alias(
            "members_after"
        ),
        F.first("strategy", ignorenulls=True).alias("strategy"),
        F.sum((F.col("outcome") == "failed").cast("int")).alias("rebalance_failures"),
        F.sum((F.col("outcome") == "open").cast("int")).alias("open_runs"),
        F.count(F.lit(1)).alias("runs"),
        F.countDistinct("member").alias("consumers"),
        F.sum(F.coalesce("attempts", F.lit(0))).alias("attempts"),
        F.sum("failed_claim_rounds").alias("failed_claim_rounds"),
        F.sum("retries").alias("retries"),
        F.sum(F.coalesce("zk_ops", F.lit(0))).alias("zk_ops"),
        F.sum(F.coalesce("watch_events", F.lit(0))).alias("watch_events"),
        F.max("partitions_total").alias("partitions_total"),
    )
    joined = summary.join(holdings, ["group", "episode"])
    outcome = (
        F.when(F.col("rebalance_failures") > 0, "failed")
        .when(F.col("open_runs") > 0, "unfinished")
        .otherwise("completed")
    )
    waits = F.map_values("waits")
    total_wait = F.aggregate(waits, F.lit(0).cast("long"), lambda a, b: a + b)
    members_after = F.coalesce("members_after", F.array().cast("array<string>"))
    episodes = joined.select(
        "group",
        F.lit(GROUP_TYPE).alias("group_type"),
        F.col("episode").cast("int").alias("episode"),
        F.lit(-1).alias("node"),
        F.lit(None).cast("int").alias("generation"),
        outcome.alias("outcome"),
        "start_ts",
        "end_ts",
        (F.col("end_ts") - F.col("start_ts")).alias("duration_ms"),
        F.col("first.trigger").alias("trigger"),
        F.col("first.members_before").alias("members_before"),
        members_after.alias("members_after"),
        F.size(members_after).alias("members_after_count"),
        F.lit(None).cast("string").alias("leader"),
        F.col("strategy").alias("protocol"),
        F.lit(False).alias("cooperative"),  # a consumer releases everything before it claims
        partitions_moved(F.col("before"), F.col("after")).alias("partitions_moved"),
        _count_partitions(F.col("after")).alias("partitions_assigned"),
        F.col("waits").alias("stop_the_world_ms"),
        F.array_max(waits).alias("stop_the_world_max_ms"),
        total_wait.alias("stop_the_world_total_ms"),
        F.col("after").alias("assignment"),
        F.lit(None).cast(ASSIGNMENTS).alias("owned"),
    )
    table = joined.select(
        "group",
        F.col("episode").cast("int").alias("episode"),
        "start_ts",
        "end_ts",
        (F.col("end_ts") - F.col("start_ts")).alias("duration_ms"),
        outcome.alias("outcome"),
        "consumers",
        "runs",
        "attempts",
        "failed_claim_rounds",
        "retries",
        "rebalance_failures",
        "zk_ops",
        "watch_events",
        total_wait.alias("time_without_partitions_ms"),
        "partitions_total",
    )
    return episodes, table


def zookeeper_group_summary(table: DataFrame) -> DataFrame:
    """Per ZooKeeper group: episodes, their median duration and the totals of the table."""
    return (
        table.groupBy("group")
        .agg(
            F.count(F.lit(1)).alias("episodes"),
            F.sum((F.col("outcome") == "completed").cast("int")).alias("completed"),
            F.sum("runs").alias("runs"),
            F.sum("failed_claim_rounds").alias("failed_claim_rounds"),
            F.sum("retries").alias("retries"),
            F.sum("rebalance_failures").alias("rebalance_failures"),
            F.sum("zk_ops").alias("zk_ops"),
            (F.sum("zk_ops") / F.count(F.lit(1))).alias("zk_ops_per_episode"),
            F.percentile("duration_ms", 0.5).alias("duration_p50_ms"),
            F.max("duration_ms").alias("duration_max_ms"),
            F.sum("time_without_partitions_ms").alias("time_without_partitions_ms"),
        )
        .orderBy("group")
    )
