"""Group types side by side (the `protocols` table and the report's comparison): how much each
protocol made its groups suffer for the same kind of churn.

Keyed on `group_type`: "classic" and "zookeeper" from the episodes (a type whose episodes are
appended to `episodes/` needs no change here), with classic groups whose members rebalanced
cooperatively (KIP-429, e.g. this package's `GroupMember`: they kept partitions through a
rebalance, the episodes' `cooperative`, whatever the protocol's name) in a row of their own,
`COOPERATIVE`: they revoke only what moves, so the same churn stops their members differently.
Client-balance and KIP-848 consumer groups, which have no episodes, get their rows from
`client_balance` and `consumer_groups` (see the pipeline's `EVENT_DERIVED_ROWS`). Per type:
groups (that rebalanced), membership changes (joins, leaves, expiries: the churn that makes
groups rebalance), rebalances, duration percentiles, partitions moved and member-seconds without
partitions, the last three also per churn event, so that logs with different churn compare.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Patch
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from coordinator.analytics.episodes import CLASSIC_GROUP_TYPE
from coordinator.analytics.metrics import DURATION_QUANTILES
from coordinator.analytics.report_html import html_table
from coordinator.analytics.report_style import OKABE_ITO, save, spans_decades

PLOT_FILE = "protocols.png"
COOPERATIVE = "classic-cooperative"
"""The comparison's row for classic groups whose members rebalanced cooperatively."""
COLUMNS = [
    "group_type", "groups", "churn_events", "rebalances", "completed", "duration_p50_ms",
    "duration_p95_ms", "duration_p99_ms", "partitions_moved", "member_seconds_without_partitions",
    "rebalances_per_churn_event", "partitions_moved_per_churn_event",
    "member_seconds_without_partitions_per_churn_event",
]  # fmt: skip
SCHEMA = StructType(
    [StructField("group_type", StringType())]
    + [StructField(c, LongType()) for c in COLUMNS[1:5]]
    + [StructField(c, DoubleType()) for c in COLUMNS[5:8]]
    + [StructField("partitions_moved", LongType())]
    + [StructField(c, DoubleType()) for c in COLUMNS[9:]]
)
"""The `protocols` table's columns as read back from Parquet (every field nullable): the
pipeline writes an empty table of this schema, without planning the comparison, when there is
nothing to compare."""


def comparison_types(episodes: DataFrame) -> DataFrame:
    """Each group's row of the comparison: its episodes' `group_type`, `COOPERATIVE` for a
    classic group with a cooperative rebalance (any of them: its first rebalance has nothing to
    keep yet)."""
    cooperative = F.col("group_type") == CLASSIC_GROUP_TYPE
    cooperative = cooperative & F.col("cooperative")
    return (
        episodes.groupBy("group", "group_type")
        .agg(F.max(cooperative).alias("cooperative"))
        .select("group", F.when(F.col("cooperative"), F.lit(COOPERATIVE))
                .otherwise(F.col("group_type")).alias("group_type"))
    )  # fmt: skip


def episode_type_flags() -> list[Column]:
    """Aggregates over episodes rows that tell which rows of the comparison they make: the
    non-classic `group_type`s (`others`), whether some classic episode was cooperative
    (`cooperative`) and whether some was not (`eager`). The pipeline observes them on the
    episodes write (`DataFrame.observe`), so that they cost no job of their own."""
    classic = F.col("group_type") == CLASSIC_GROUP_TYPE
    cooperative = F.coalesce(classic & F.col("cooperative"), F.lit(False))
    return [
        F.collect_set(F.when(~classic, F.col("group_type"))).alias("others"),
        F.max(cooperative).alias("cooperative"),
        F.max(classic & ~cooperative).alias("eager"),
    ]


def episode_type_count(episodes: DataFrame, flags: Mapping[str, Any] | None = None) -> int:
    """How many rows of the comparison the episodes make (the distinct `comparison_types`), from
    `flags` (the `episode_type_flags` of every row of `episodes`, observed when it was written)
    or else one global aggregate over the episodes table; the per-group query runs only when
    that cannot tell (some classic episodes cooperative and some not: one group or two)."""
    if flags is None:
        row = episodes.agg(*episode_type_flags()).first()
        flags = row.asDict() if row is not None else {}
    if flags.get("cooperative") and flags.get("eager"):
        return int(comparison_types(episodes).select("group_type").distinct().count())
    others = flags.get("others") or []
    return len(others) + bool(flags.get("cooperative")) + bool(flags.get("eager"))


def protocol_comparison(activity: DataFrame, episodes: DataFrame) -> DataFrame:
    """One row per group type (columns: `COLUMNS`), from `group_activity` and `episodes`."""
    # A group's type is its episodes' (one per group): the activity scan aggregates no strings,
    # which would make it sort-based. Groups that never rebalanced are left out.
    types = comparison_types(episodes)
    episodes = episodes.drop("group_type").join(types, "group")
    groups = (
        activity.where(F.col("valid") & F.col("group").isNotNull())
        .join(types, "group")
        .groupBy("group_type")
        .agg(F.count(F.lit(1)).alias("groups"), F.sum("churn_events").alias("churn_events"))
    )
    per_episode = episodes.groupBy("group_type").agg(
        F.count(F.lit(1)).alias("rebalances"),
        F.sum((F.col("outcome") == "completed").cast("long")).alias("completed"),
        F.percentile("duration_ms", list(DURATION_QUANTILES)).alias("q"),
        F.sum("partitions_moved").alias("partitions_moved"),
        (F.sum("stop_the_world_total_ms") / 1000).alias("member_seconds_without_partitions"),
    )
    churn = F.col("churn_events")

    def per_churn(column: str) -> Any:
        return F.when(churn > 0, F.col(column) / churn).alias(f"{column}_per_churn_event")

    joined = groups.join(per_episode, "group_type", "left").fillna(0, ["rebalances", "completed"])
    return joined.select(
        "group_type", "groups", "churn_events", "rebalances", "completed",
        *(F.col("q")[i].alias(f"duration_p{round(q * 100)}_ms")
          for i, q in enumerate(DURATION_QUANTILES)),
        "partitions_moved", "member_seconds_without_partitions",
        per_churn("rebalances"), per_churn("partitions_moved"),
        per_churn("member_seconds_without_partitions"),
    ).orderBy("group_type")  # fmt: skip


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Four panels, one bar per group type in each: duration percentiles, and per churn event
    the rebalances, partitions moved and member-seconds without partitions."""
    types = [r["group_type"] for r in rows]
    colours = [OKABE_ITO[i % len(OKABE_ITO)] for i in range(len(types))]
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.6))
    duration = axes[0]
    width = 0.8 / max(len(types), 1)
    for i, r in enumerate(rows):
        values = [r[f"duration_p{q}_ms"] or 0 for q in (50, 95, 99)]
        duration.bar([x + i * width for x in range(3)], values, width, color=colours[i])
    duration.set_xticks([x + width * (len(types) - 1) / 2 for x in range(3)], ["p50", "p95", "p99"])
    all_durations = [r[f"duration_p{q}_ms"] or 0 for r in rows for q in (50, 95, 99)]
    if spans_decades(all_durations):
        duration.set_yscale("log")
    duration.set_ylabel("rebalance duration (ms)")
    duration.set_title("Duration percentiles")
    panels = [
        ("rebalances_per_churn_event", "rebalances per churn event", "Rebalances"),
        ("partitions_moved_per_churn_event", "partitions moved per churn event", "Moves"),
        ("member_seconds_without_partitions_per_churn_event",
         "member-seconds without partitions\nper churn event", "Stopped"),
    ]  # fmt: skip
    for ax, (column, label, title) in zip(axes[1:], panels, strict=True):
        ax.bar(range(len(types)), [r[column] or 0 for r in rows], color=colours)
        ax.set_xticks(range(len(types)), types)
        ax.set_ylabel(label)
        ax.set_title(title)
    fig.suptitle("Group types side by side (churn event: a member joined, left or expired)")
    handles = [Patch(color=c, label=t) for c, t in zip(colours, types, strict=True)]
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(types),
               frameon=False, title="group type")  # fmt: skip
    save(fig, path)
    plt.close(fig)


def protocols_section(table: DataFrame, out_dir: Path) -> str:
    """The section's HTML (and its plot in `out_dir`) when the log holds more than one group
    type; empty otherwise, since there is nothing to compare."""
    rows = [r.asDict() for r in table.collect()]
    if len(rows) < 2:
        return ""
    _plot(rows, out_dir / PLOT_FILE)
    return f"""<section id="protocols"><h2>Group types side by side</h2>
<p>The same churn costs each protocol differently: per group type, how often its groups
rebalanced, for how long, how many partitions changed owner and how long members went without
partitions, in all and per membership change (join, leave, expiry).</p>
{html_table(COLUMNS, [[r[c] for c in COLUMNS] for r in rows])}
<img src="{PLOT_FILE}" alt="group types compared"></section>
"""
