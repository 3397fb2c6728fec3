"""KIP-848 consumer groups in the group-type comparison, from their own events.

A consumer group has no join round to make episodes of: the coordinator bumps the group epoch,
computes a target assignment for it (several bumps may share one target, `group.consumer.
assignment.interval.ms`) and every member reconciles towards the target on its own heartbeats,
giving back only what moves. So, per target assignment (one rebalance of the comparison):

* it starts at the first group-epoch bump after the previous target and completes when every
  member of the target has reported `stable` at that target epoch; its duration runs until the
  last of them did (a target some member never reached, because a newer one replaced it or the
  member went away, is counted but not completed, and has no duration);
* partitions moved: partitions whose owner in this target differs from the previous target's
  (a partition's first owner counts, as a classic episode counts a first assignment);
* member-seconds without partitions: for each member, from its join to the first reconciliation
  that gave it partitions (or to its leave or expiry): the only members that stop fetching
  altogether under this protocol are the ones that have not received anything yet.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator.analytics.metrics import DURATION_QUANTILES

GROUP_TYPE = "consumer"
EVENT_TYPES = (
    "member_joined",
    "member_left",
    "member_expired",
    "group_epoch_bumped",
    "target_assignment",
    "member_reconciled",
)
"""The events `consumer_group_comparison` reads."""


def _targets(events: DataFrame) -> DataFrame:
    """One row per target assignment: group, epoch, start_ts, end_ts (null unless completed)."""
    kind = F.col("type")
    targets = events.where(kind == "target_assignment").select(
        "group", F.col("generation").alias("epoch"), F.col("ts").alias("target_ts"), "assignments"
    )
    previous = F.lag("epoch").over(Window.partitionBy("group").orderBy("epoch"))
    targets = targets.withColumn("previous_epoch", F.coalesce(previous, F.lit(0)))
    bumps = events.where(kind == "group_epoch_bumped").select(
        F.col("group").alias("b_group"),
        F.col("generation").alias("bump"),
        F.col("ts").alias("bump_ts"),
    )
    starts = (
        targets.join(
            bumps,
            (F.col("b_group") == F.col("group"))
            & (F.col("bump") > F.col("previous_epoch"))
            & (F.col("bump") <= F.col("epoch")),
            "left",
        )
        .groupBy("group", "epoch")
        .agg(F.min("bump_ts").alias("bump_ts"), F.first("target_ts").alias("target_ts"))
    )
    reached = (
        events.where(
            (kind == "member_reconciled")
            & (F.col("member_state") == "stable")
            & (F.col("generation") == F.col("target_epoch"))
        )
        .groupBy("group", F.col("target_epoch").alias("epoch"), "member")
        .agg(F.min("ts").alias("reached_ts"))
    )
    members = targets.select(
        "group", "epoch", F.explode_outer(F.map_keys("assignments")).alias("member")
    )
    ends = (
        members.join(reached, ["group", "epoch", "member"], "left")
        .groupBy("group", "epoch")
        .agg(
            F.count("member").alias("members"),
            F.count("reached_ts").alias("reached"),
            F.max("reached_ts").alias("last_reached_ts"),
        )
    )
    completed = F.col("reached") == F.col("members")
    start = F.coalesce("bump_ts", "target_ts")
    end = F.when(completed, F.greatest("last_reached_ts", "target_ts"))
    return starts.join(ends, ["group", "epoch"]).select(
        "group", "epoch", completed.alias("completed"), (end - start).alias("duration_ms")
    )


def _moves(events: DataFrame) -> DataFrame:
    owners = events.where(F.col("type") == "target_assignment").select(
        "group",
        F.col("generation").alias("epoch"),
        F.explode("assignments").alias("member", "entries"),
    )
    claims = owners.select(
        "group", "epoch", "member", F.explode("entries").alias("entry")
    ).select(
        "group", "epoch", "member", F.col("entry.topic").alias("topic"),
        F.explode("entry.partitions").alias("partition"),
    )  # fmt: skip
    previous = F.lag("member").over(
        Window.partitionBy("group", "topic", "partition").orderBy("epoch")
    )
    return claims.select(
        (previous.isNull() | (previous != F.col("member"))).cast("long").alias("moved")
    ).agg(F.coalesce(F.sum("moved"), F.lit(0)).alias("partitions_moved"))


def _waits(events: DataFrame) -> DataFrame:
    kind = F.col("type")
    given = (kind == "member_reconciled") & (F.col("assigned") > 0)
    gone = kind.isin("member_left", "member_expired")
    per_member = (
        events.where(F.col("member").isNotNull())
        .groupBy("group", "member")
        .agg(
            F.min(F.when(kind == "member_joined", F.col("ts"))).alias("joined"),
            F.min(F.when(given | gone, F.col("ts"))).alias("until"),
        )
    )
    waited = F.col("until") - F.col("joined")
    return per_member.where(F.col("joined").isNotNull()).agg(
        (F.coalesce(F.sum(waited), F.lit(0)) / 1000).alias("member_seconds_without_partitions")
    )


def consumer_group_comparison(events: DataFrame, activity: DataFrame) -> DataFrame:
    """The comparison's row for consumer groups (the columns of `protocols.COLUMNS`), from the
    valid events of `EVENT_TYPES` and `group_activity`."""
    mine = events.where(F.col("group_type") == GROUP_TYPE)
    targets = _targets(mine).agg(
        F.count(F.lit(1)).alias("rebalances"),
        F.sum(F.col("completed").cast("long")).alias("completed"),
        F.percentile("duration_ms", list(DURATION_QUANTILES)).alias("q"),
    )
    groups = activity.where(F.col("valid") & (F.col("consumer_events") > 0)).agg(
        F.count(F.lit(1)).alias("groups"), F.sum("churn_events").alias("churn_events")
    )
    churn = F.col("churn_events")

    def per_churn(column: str) -> Column:
        return F.when(churn > 0, F.col(column) / churn).alias(f"{column}_per_churn_event")

    return (
        groups.crossJoin(targets)
        .crossJoin(_moves(mine))
        .crossJoin(_waits(mine))
        .select(
            F.lit(GROUP_TYPE).alias("group_type"),
            "groups",
            "churn_events",
            "rebalances",
            F.coalesce("completed", F.lit(0)).alias("completed"),
            *(
                F.col("q")[i].alias(f"duration_p{round(q * 100)}_ms")
                for i, q in enumerate(DURATION_QUANTILES)
            ),
            F.col("partitions_moved").cast("long").alias("partitions_moved"),
            "member_seconds_without_partitions",
            per_churn("rebalances"),
            per_churn("partitions_moved"),
            per_churn("member_seconds_without_partitions"),
        )
    )
