"""Ownership rows of ZooKeeper-coordinated groups, from their consumers' runs (`zookeeper_runs`),
in the columns of the classic groups' `ownership` table.

A 0.8 consumer owns what it claimed from the end of a completed run until it lets go: at the
start of its next run (it releases everything first), when it leaves (`member_left`), or, for a
consumer that died without a word (SIGKILL: its owner znodes vanish with its session), when
another consumer starts the run in which it claims one of those partitions (and the owner had not
released them itself before that claim succeeded): that run starts when the dead consumer's
session has expired and the others' watches fired, the first moment the log shows the
partitions free. Episode numbers are left null (ZooKeeper episodes are cut from
overlapping runs of several consumers, not from one consumer's run).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from coordinator.analytics.ownership import partitions_of

TAKEN_OVER = "taken_over"
LEFT = "member_left"


def zookeeper_ownership(runs: DataFrame, notes: DataFrame) -> DataFrame:
    """Ownership rows (see the module docstring) from `zookeeper_runs` and `member_notes`."""
    later_runs = Window.partitionBy("group", "member").orderBy("run")
    held = (
        runs.select(
            "group",
            "member",
            "run",
            "end_ts",
            "outcome",
            "held_after",
            F.lead(F.struct("start_ts", "trigger")).over(later_runs).alias("next"),
        )
        .where(F.col("outcome") == "completed")
        .select(
            "group",
            "member",
            F.col("end_ts").alias("start_ts"),
            F.col("next.start_ts").alias("next_run_ts"),
            F.col("next.trigger").alias("next_trigger"),
            partitions_of(F.col("held_after")).alias("partitions"),
        )
        .where(F.size("partitions") > 0)
    )
    claims = runs.where(F.col("outcome") == "completed").select(
        "group",
        F.col("member").alias("claimer"),
        F.col("start_ts").alias("claim_start_ts"),
        F.col("end_ts").alias("claim_end_ts"),
        partitions_of(F.col("held_after")).alias("claimed"),
    )
    taken = (
        held.join(claims, "group")
        .where(
            (F.col("claimer") != F.col("member"))
            & (F.col("claim_start_ts") > F.col("start_ts"))
            & F.arrays_overlap("partitions", "claimed")
            # a consumer that released them itself before the claim succeeded was not taken over
            & (F.col("next_run_ts").isNull() | (F.col("next_run_ts") > F.col("claim_end_ts")))
        )
        .groupBy("group", "member", "start_ts")
        .agg(F.min("claim_start_ts").alias("taken_ts"))
    )
    rows = held.join(taken, ["group", "member", "start_ts"], "left").join(
        notes, ["group", "member"], "left"
    )
    left = F.when(F.col("left_ts") > F.col("start_ts"), F.col("left_ts"))
    ends = F.array_compact(
        F.array(
            F.struct(F.col("next_run_ts").alias("ts"), F.col("next_trigger").alias("by")),
            F.when(left.isNotNull(), F.struct(left.alias("ts"), F.lit(LEFT).alias("by"))),
            F.when(
                F.col("taken_ts").isNotNull(),
                F.struct(F.col("taken_ts").alias("ts"), F.lit(TAKEN_OVER).alias("by")),
            ),
        )
    )
    first_end = F.array_min(F.filter(ends, lambda e: e["ts"].isNotNull()))
    end_ts = first_end["ts"]
    return rows.select(
        "group",
        "member",
        "client_id",
        "start_ts",
        end_ts.alias("end_ts"),
        (end_ts - F.col("start_ts")).alias("duration_ms"),
        "partitions",
        F.size("partitions").alias("partition_count"),
        F.lit(None).cast("int").alias("start_episode"),
        F.lit(None).cast("int").alias("end_episode"),
        first_end["by"].alias("ended_by"),
        F.lit(False).alias("kept"),
    )
