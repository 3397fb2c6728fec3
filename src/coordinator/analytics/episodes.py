"""Cut each group's event stream into rebalance episodes (see docs/analytics.md).

An episode opens at `rebalance_started` and closes at the next `group_stable` ("completed") or
`group_empty` ("empty"); if another `rebalance_started` comes first it is "superseded", and if
the log ends first it is "unfinished". Everything is computed with per-group windows and joins, so
the work is spread over the cluster by group and nothing is collected to the driver.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator.analytics.schema import ASSIGNMENTS, ORDER_COLUMNS

REBALANCE_EVENT_TYPES = (
    "rebalance_started",
    "join_completed",
    "group_empty",
    "sync_completed",
    "group_stable",
)
ENDING_TYPES = ("group_stable", "group_empty")


def empty_assignments() -> Column:
    """What a group owns after `group_empty`, or before the first rebalance of a new group."""
    return F.create_map().cast(ASSIGNMENTS)


def is_cooperative(protocol: Column) -> Column:
    """Cooperative assignors only revoke the partitions that move; eager ones revoke them all."""
    return F.coalesce(protocol.contains("cooperative"), F.lit(False))


def _order_key() -> Column:
    return F.struct(*(F.col(c) for c in ORDER_COLUMNS))


def _topic_partitions(entries: Column) -> Column:
    """One member's assignment as a flat array of (topic, partition) structs."""
    return F.flatten(
        F.transform(
            entries,
            lambda e: F.transform(
                e["partitions"], lambda p: F.struct(e["topic"].alias("topic"), p.alias("partition"))
            ),
        )
    )


def _measurable(assignments: Column) -> Column:
    """Moves can be counted only from consumer-protocol assignments (no null member entry)."""
    return assignments.isNotNull() & F.forall(F.map_values(assignments), lambda v: v.isNotNull())


def _partition_count(assignments: Column) -> Column:
    return F.aggregate(
        F.map_values(assignments),
        F.lit(0),
        lambda total, entries: total + F.coalesce(F.size(_topic_partitions(entries)), F.lit(0)),
    )


def _rebalance_events(events: DataFrame) -> DataFrame:
    """The rebalance events of each group, numbered by the episode they fall in.

    `episode` counts the `rebalance_started` events so far (0 before the first one); `closed` is
    true once the episode's ending event has been seen, for the events that follow it.
    """
    in_group = Window.partitionBy("group").orderBy(*ORDER_COLUMNS)
    so_far = in_group.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before_row = in_group.rowsBetween(Window.unboundedPreceding, -1)
    assignment_set = F.when(
        F.col("type") == "sync_completed", F.struct(F.col("assignments").alias("a"))
    ).when(
        F.col("type") == "group_empty",
        F.struct(empty_assignments().alias("a")),
    )
    numbered = (
        events.where(F.col("type").isin(*REBALANCE_EVENT_TYPES))
        .select(
            "group",
            "type",
            "ts",
            "node",
            "generation",
            "trigger",
            "member_count",
            "member_ids",
            "leader",
            "protocol",
            "assignments",
            *ORDER_COLUMNS[1:],
        )
        .withColumn(
            "episode", F.sum((F.col("type") == "rebalance_started").cast("int")).over(so_far)
        )
        .withColumn("in_force", F.last(assignment_set, ignorenulls=True).over(before_row))
    )
    in_episode = (
        Window.partitionBy("group", "episode")
        .orderBy(*ORDER_COLUMNS)
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    ended = F.max(F.col("type").isin(*ENDING_TYPES).cast("int")).over(in_episode)
    return numbered.withColumn("closed", F.coalesce(ended, F.lit(0)) == 1)


def _first_by_order(value: Column, when: Column) -> Column:
    return F.min_by(value, F.when(when, _order_key()))


def _last_by_order(value: Column, when: Column) -> Column:
    return F.max_by(value, F.when(when, _order_key()))


def _owners(episodes: DataFrame, assignments: str) -> DataFrame:
    """(group, episode, topic, partition) → sorted owners, from one assignments column."""
    by_member = episodes.where(F.col(assignments).isNotNull()).select(
        "group", "episode", F.explode(assignments).alias("member", "entries")
    )
    return (
        by_member.select(
            "group", "episode", "member", F.explode(_topic_partitions(F.col("entries"))).alias("tp")
        )
        .groupBy(
            "group",
            "episode",
            F.col("tp.topic").alias("topic"),
            F.col("tp.partition").alias("partition"),
        )
        .agg(F.array_sort(F.collect_set("member")).alias("owners"))
    )


def _partitions_moved(episodes: DataFrame) -> DataFrame:
    """Per measurable episode: partitions whose owners differ between before and after."""
    measurable = episodes.where(F.col("moves_measurable")).select(
        "group", "episode", "before", "after"
    )
    keys = ["group", "episode", "topic", "partition"]
    before = _owners(measurable, "before").withColumnRenamed("owners", "owners_before")
    after = _owners(measurable, "after").withColumnRenamed("owners", "owners_after")
    moved = (
        before.join(after, keys, "full_outer")
        .where(~F.col("owners_before").eqNullSafe(F.col("owners_after")))
        .groupBy("group", "episode")
        .agg(F.count(F.lit(1)).alias("moved"))
    )
    return moved


def _stop_the_world(start: Column, end: Column) -> Column:
    """Per member of the new generation: ms spent without partitions during the episode.

    Eager protocols revoke everything at the start, so every member waits from the start until
    the assignment is handed out. With a cooperative protocol a member keeps the partitions that do
    not move, so only members that keep none of their previous partitions wait (the log has no
    revocation time, so they are counted from the start too).
    """
    members = F.array_distinct(F.col("members_after"))
    wait = end - start

    def member_wait(member: Column) -> Column:
        previous = _topic_partitions(F.coalesce(F.col("before")[member], F.array()))
        current = _topic_partitions(F.coalesce(F.col("after")[member], F.array()))
        keeps_something = F.size(F.array_intersect(previous, current)) > 0
        cooperative_wait = F.when(keeps_something, F.lit(0).cast("long")).otherwise(wait)
        return F.when(is_cooperative(F.col("protocol")), cooperative_wait).otherwise(wait)

    return F.map_from_entries(F.transform(members, lambda m: F.struct(m, member_wait(m))))


def build_episodes(events: DataFrame) -> DataFrame:
    """One row per rebalance episode of every group (columns in docs/analytics.md)."""
    rows = _rebalance_events(events)
    starts = rows.where(F.col("type") == "rebalance_started").select(
        "group",
        "episode",
        "node",
        F.col("ts").alias("start_ts"),
        "trigger",
        F.col("member_count").alias("members_before"),
        F.when(F.col("in_force").isNotNull(), F.col("in_force.a"))
        .when(F.col("generation") == 0, empty_assignments())
        .alias("before"),
        F.lead("ts").over(Window.partitionBy("group").orderBy("episode")).alias("next_start_ts"),
    )
    event_type = F.col("type")
    inside = (
        rows.where((F.col("episode") > 0) & ~F.col("closed") & (event_type != "rebalance_started"))
        .groupBy("group", "episode")
        .agg(
            _first_by_order(F.struct("type", "ts"), event_type.isin(*ENDING_TYPES)).alias("ending"),
            _last_by_order(
                F.struct("generation", "member_ids", "leader", "protocol"),
                event_type == "join_completed",
            ).alias("join"),
            _last_by_order(F.struct("assignments"), event_type == "sync_completed").alias("sync"),
        )
    )
    ending_type = F.col("ending.type")
    outcome = (
        F.when(ending_type == "group_stable", "completed")
        .when(ending_type == "group_empty", "empty")
        .when(F.col("next_start_ts").isNotNull(), "superseded")
        .otherwise("unfinished")
    )
    end_ts = F.coalesce(F.col("ending.ts"), F.col("next_start_ts"))
    after = F.when(F.col("outcome") == "completed", F.col("sync.assignments")).when(
        F.col("outcome") == "empty", empty_assignments()
    )
    episodes = (
        starts.join(inside, ["group", "episode"], "left")
        .withColumn("outcome", outcome)
        .withColumn("end_ts", end_ts)
        .withColumn("after", after)
        .withColumn("generation", F.col("join.generation"))
        .withColumn(
            "members_after", F.coalesce(F.col("join.member_ids"), F.array().cast("array<string>"))
        )
        .withColumn("leader", F.col("join.leader"))
        .withColumn("protocol", F.col("join.protocol"))
        .withColumn("moves_measurable", _measurable(F.col("before")) & _measurable(F.col("after")))
    )
    moved = _partitions_moved(episodes)
    no_wait = F.create_map().cast("map<string,bigint>")
    stop_the_world = F.when(
        F.col("outcome") == "completed", _stop_the_world(F.col("start_ts"), F.col("end_ts"))
    ).otherwise(no_wait)
    result = (
        episodes.join(moved, ["group", "episode"], "left")
        .withColumn("stop_the_world_ms", stop_the_world)
        .select(
            "group",
            "episode",
            "node",
            "generation",
            "outcome",
            "start_ts",
            "end_ts",
            (F.col("end_ts") - F.col("start_ts")).alias("duration_ms"),
            "trigger",
            "members_before",
            "members_after",
            F.when(F.col("join").isNotNull(), F.size("members_after"))
            .when(F.col("outcome") == "empty", 0)
            .alias("members_after_count"),
            "leader",
            "protocol",
            F.when(F.col("moves_measurable"), F.coalesce(F.col("moved"), F.lit(0))).alias(
                "partitions_moved"
            ),
            F.when(_measurable(F.col("after")), _partition_count(F.col("after"))).alias(
                "partitions_assigned"
            ),
            "stop_the_world_ms",
            F.array_max(F.map_values("stop_the_world_ms")).alias("stop_the_world_max_ms"),
            F.aggregate(
                F.map_values("stop_the_world_ms"), F.lit(0).cast("long"), lambda a, b: a + b
            ).alias("stop_the_world_total_ms"),
        )
    )
    return result
