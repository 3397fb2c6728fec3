"""Client-balance groups (TubeMQ's client-side assignment) in the group-type comparison.

Such a group never rebalances: each node decides what it takes and registers partitions one by
one, so it has no episodes and no rebalance durations. What the comparison can say about it, in
the same units as the other types:

* partitions moved: registrations that give a partition a new holder (its first registration in
  the group, or one by another node than the last registration's), as a classic episode counts
  every partition whose owner changes, the first assignment included;
* member-seconds without partitions: for each node, from its join to its first registration (or
  to its leave or expiry, if it never registered one): the allocation period TubeMQ's users pick
  it to avoid.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

GROUP_TYPE = "client-balance"
EVENT_TYPES = ("member_joined", "member_left", "member_expired", "partition_registered")
"""The events `client_balance_comparison` reads."""


def client_balance_comparison(events: DataFrame, activity: DataFrame) -> DataFrame:
    """The comparison's row for client-balance groups (the columns of `protocols.COLUMNS`), from
    the valid events of `EVENT_TYPES` and `group_activity`."""
    mine = events.where(F.col("group_type") == GROUP_TYPE)
    kind = F.col("type")
    registered = mine.where(kind == "partition_registered")
    previous = F.lag("member").over(
        Window.partitionBy("group", "topic", "topic_partition").orderBy("ts", "source_row")
    )
    moves = registered.select(
        (previous.isNull() | (previous != F.col("member"))).cast("long").alias("moved")
    ).agg(F.sum("moved").alias("partitions_moved"))
    per_node = mine.groupBy("group", "member").agg(
        F.min(F.when(kind == "member_joined", F.col("ts"))).alias("joined"),
        F.min(F.when(kind == "partition_registered", F.col("ts"))).alias("first_registered"),
        F.min(F.when(kind.isin("member_left", "member_expired"), F.col("ts"))).alias("gone"),
    )
    waited = F.coalesce("first_registered", "gone") - F.col("joined")
    waits = per_node.where(F.col("joined").isNotNull()).agg(
        (F.coalesce(F.sum(waited), F.lit(0)) / 1000).alias("member_seconds_without_partitions")
    )
    groups = activity.where(F.col("valid") & (F.col("client_balance_events") > 0)).agg(
        F.count(F.lit(1)).alias("groups"), F.sum("churn_events").alias("churn_events")
    )
    churn = F.col("churn_events")

    def per_churn(column: str) -> Column:
        return F.when(churn > 0, F.col(column) / churn).alias(f"{column}_per_churn_event")

    no_duration = F.lit(None).cast("double")
    return (
        groups.crossJoin(moves)
        .crossJoin(waits)
        .select(
            F.lit(GROUP_TYPE).alias("group_type"),
            "groups",
            "churn_events",
            F.lit(0).cast("long").alias("rebalances"),
            F.lit(0).cast("long").alias("completed"),
            no_duration.alias("duration_p50_ms"),
            no_duration.alias("duration_p95_ms"),
            no_duration.alias("duration_p99_ms"),
            F.coalesce("partitions_moved", F.lit(0)).cast("long").alias("partitions_moved"),
            "member_seconds_without_partitions",
            F.when(churn > 0, F.lit(0.0)).alias("rebalances_per_churn_event"),
            per_churn("partitions_moved"),
            per_churn("member_seconds_without_partitions"),
        )
    )
