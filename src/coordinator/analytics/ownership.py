"""Who owned which partitions when: the `ownership` table, from the episodes (docs/analytics.md).

A member owns what an assignment gives it from the moment the assignment is handed out (the end
of a completed episode) until the assignment is revoked. An eager protocol revokes everything at
the start of the next episode, whatever its outcome; a cooperative one keeps its partitions
through episodes that decide nothing (superseded, unfinished) and, at the start of the next
episode that does (completed or empty), revokes what the new assignment takes away, while what
it keeps (and, where it said, owned when it joined) stays owned through that episode (a `kept`
row). Eager or cooperative is what the members did (the episodes' `cooperative`), not the
protocol's name. A member that stopped heartbeating (a
session expiry) is taken to own nothing from its last heartbeat, one session timeout before its
expiry: that is when the coordinator last knew it alive, and a crashed consumer consumes
nothing. Only classic groups (`group_type` "classic") are read here.

One row per member and stretch of constant ownership; the partitions of the row are owned for
its whole stretch. Computed from the `episodes` table (one window over each group's episodes and
row-local array functions) and per-member notes from a scan of the membership events.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator.analytics.episodes import CLASSIC_GROUP_TYPE
from coordinator.analytics.schema import ORDER_COLUMNS

PARTITION = "struct<topic:string,partition:int>"
LAST_HEARTBEAT = "last_heartbeat"
"""`ended_by` of a row cut at its member's last heartbeat."""
HANDED_OUT = "assignment"
"""`ended_by` of a kept row: the episode's new assignment takes over at its end."""


def partitions_of(entries: Column) -> Column:
    """One member's assignment entries as a sorted, distinct array of (topic, partition)."""
    flat = F.flatten(
        F.transform(
            F.coalesce(
                entries, F.array().cast("array<struct<topic:string,partitions:array<int>>>")
            ),
            lambda e: F.transform(
                F.coalesce(e["partitions"], F.array().cast("array<int>")),
                lambda p: F.struct(e["topic"].alias("topic"), p.alias("partition")),
            ),
        )
    )
    # `sort_array`, not `array_sort`: the same order for these non-null structs, compared in
    # generated code instead of through an interpreted comparator lambda.
    return F.sort_array(F.array_distinct(flat)).cast(f"array<{PARTITION}>")


NOTE_TYPES = ("member_joined", "member_left", "member_expired")
"""The events `member_notes` reads."""


def member_notes(events: DataFrame) -> DataFrame:
    """Per (group, member): `client_id` (of its first `member_joined`), `last_heard_ts` (its
    first session expiry's time less its session timeout) and `left_ts` (its last
    `member_left`), from the valid events (a scan that keeps only `NOTE_TYPES`; the notes are
    not collected in the activity scan, where string aggregates made every group's aggregation
    sort-based and the scan three times slower)."""
    kind = F.col("type")
    at = F.struct(*(F.col(c) for c in ORDER_COLUMNS))
    expired = (kind == "member_expired") & (F.col("reason") == "session_timeout")
    expired_at = F.when(expired & F.col("session_timeout_ms").isNotNull(), at)
    return (
        events.where(kind.isin(*NOTE_TYPES) & F.col("group").isNotNull())
        .groupBy("group", "member")
        .agg(
            F.min_by("client_id", F.when(kind == "member_joined", at)).alias("client_id"),
            F.min_by(F.col("ts") - F.col("session_timeout_ms"), expired_at).alias("last_heard_ts"),
            F.max(F.when(kind == "member_left", F.col("ts"))).alias("left_ts"),
        )
    )


def build_ownership(episodes: DataFrame, notes: DataFrame) -> DataFrame:
    """The `ownership` table (columns in docs/analytics.md) of the classic groups."""
    outcome = F.col("outcome")
    cooperative = F.col("cooperative")  # what the members did (episodes.kept_through_join)
    revokes = ~cooperative | outcome.isin("completed", "empty")
    # An episode's assignment is measurable exactly when the episodes job counted its
    # partitions (`partitions_assigned` is null otherwise): no test of every member's entry here.
    measurable = F.col("partitions_assigned").isNotNull()
    # The first revoking episode after each one. The window runs backwards over the later
    # episodes so that its frame only grows: Spark recomputes a shrinking frame (current row to
    # unbounded following) from scratch for every row, quadratic in a group's episodes.
    later = (
        Window.partitionBy("group")
        .orderBy(F.col("episode").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    # The window carries the next episode's assignment only when its members keep something
    # through it (a completed cooperative rebalance): an eager group's maps stay out of it.
    revoking = F.struct(
        "episode",
        "start_ts",
        "end_ts",
        "trigger",
        F.when((outcome == "completed") & cooperative & measurable, F.col("assignment")).alias(
            "keeps_from"
        ),
        "owned",
    )
    holders = (
        episodes.where(F.col("group_type") == CLASSIC_GROUP_TYPE)
        .select(
            "group",
            "episode",
            "outcome",
            "end_ts",
            "assignment",
            "partitions_assigned",
            F.last(F.when(revokes, revoking), ignorenulls=True).over(later).alias("next"),
        )
        .where((outcome == "completed") & measurable)
        .select(
            "group",
            "episode",
            "end_ts",
            "next",
            F.explode("assignment").alias("member", "entries"),
        )
        .select(
            "group",
            "member",
            "episode",
            "end_ts",
            "next",
            partitions_of(F.col("entries")).alias("partitions"),
        )
        .where(F.size("partitions") > 0)
    )
    nxt = F.col("next")
    held = F.struct(
        F.col("partitions").alias("partitions"),
        F.col("end_ts").alias("start_ts"),
        nxt["start_ts"].alias("end_ts"),
        F.col("episode").alias("start_episode"),
        nxt["episode"].alias("end_episode"),
        nxt["trigger"].alias("ended_by"),
        F.lit(False).alias("kept"),
    )
    keeps = nxt["keeps_from"].isNotNull()
    kept_partitions = F.array_intersect(
        "partitions", partitions_of(nxt["keeps_from"][F.col("member")])
    )
    # A member that said what it owned when it joined kept only that (a member that revoked
    # everything first, beside members that kept theirs, kept nothing).
    said = nxt["owned"][F.col("member")]
    kept_partitions = F.when(
        said.isNotNull(), F.array_intersect(kept_partitions, partitions_of(said))
    ).otherwise(kept_partitions)
    kept = F.struct(
        kept_partitions.alias("partitions"),
        nxt["start_ts"].alias("start_ts"),
        nxt["end_ts"].alias("end_ts"),
        nxt["episode"].alias("start_episode"),
        nxt["episode"].alias("end_episode"),
        F.lit(HANDED_OUT).alias("ended_by"),
        F.lit(True).alias("kept"),
    )
    # A holder's stretch and, when the next episode keeps some of it, the kept stretch, from one
    # pass over the holders (two selects of them would compute the window twice).
    stretches = F.when(keeps, F.array(held, kept)).otherwise(F.array(held))
    rows = (
        holders.select("group", "member", F.inline(stretches))
        .where(F.size("partitions") > 0)
        .join(notes.drop("left_ts"), ["group", "member"], "left")
    )
    last_heard = F.col("last_heard_ts")
    cut = (
        last_heard.isNotNull()
        & (F.col("start_ts") < last_heard)
        & (F.col("end_ts").isNull() | (F.col("end_ts") > last_heard))
    )
    end_ts = F.when(cut, last_heard).otherwise(F.col("end_ts"))
    return rows.select(
        "group",
        "member",
        "client_id",
        "start_ts",
        end_ts.alias("end_ts"),
        (end_ts - F.col("start_ts")).alias("duration_ms"),
        "partitions",
        F.size("partitions").alias("partition_count"),
        "start_episode",
        F.when(cut, F.lit(None).cast("int")).otherwise(F.col("end_episode")).alias("end_episode"),
        F.when(cut, F.lit(LAST_HEARTBEAT)).otherwise(F.col("ended_by")).alias("ended_by"),
        "kept",
    )
