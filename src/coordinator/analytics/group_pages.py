"""A page per busy group: its episodes table next to its ownership timeline.

Only the busiest groups' rows reach the driver, each capped: their ownership rows, episodes and
member events (joins, leaves, expiries, fenced commits), collected in one query per table.
"""

from __future__ import annotations

import html
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator.analytics.ownership_plot import GroupStory, draw_partitions, draw_timeline
from coordinator.analytics.report_html import html_table, page

PAGE_GROUPS = 8
ROWS_PER_GROUP = 5000
EPISODES_PER_PAGE = 500
MEMBER_EVENT_TYPES = ("member_joined", "member_left", "member_expired", "commit_fenced")


@dataclass(frozen=True)
class GroupPage:
    """A written page: its group, file name and the timeline image's file name."""

    group: str
    page: str
    timeline: str


def drawn_groups_flags(requested: Sequence[str] = ()) -> list[Column]:
    """Aggregates over the `groups` rows that pick the drawn groups (see `drawn_groups`): the
    `PAGE_GROUPS` that rebalance most (`busiest`: bounded, whatever the number of groups) and
    those of `requested` that rebalanced (`asked`). The pipeline observes them on the groups
    write (`DataFrame.observe`), so that the pick costs no job of its own."""
    rebalanced = F.col("rebalances") > 0
    rank = F.struct((-F.col("rebalances")).alias("rank"), F.col("group").alias("group"))
    asked = F.col("group").isin(list(dict.fromkeys(requested))) if requested else F.lit(False)
    return [
        F.min_by(rank, F.when(rebalanced, rank), PAGE_GROUPS).alias("busiest"),
        F.collect_set(F.when(rebalanced & asked, F.col("group"))).alias("asked"),
    ]


def drawn_groups(
    metrics: DataFrame, requested: Sequence[str] = (), flags: Mapping[str, Any] | None = None
) -> list[str]:
    """The groups that get a page and an ownership timeline: the `PAGE_GROUPS` that rebalance
    most (ties by name), then the `requested` ones (`report --group`) that are not among them,
    in the order asked; only groups that rebalanced (`metrics` is the `groups` table). From
    `flags` (the `drawn_groups_flags` of every row of `metrics`, observed when it was written)
    or else by querying `metrics`. The pipeline computes the `ownership` table for these
    groups only."""
    extra = list(dict.fromkeys(requested))
    if flags is not None:
        busiest = sorted((r["rank"], r["group"]) for r in flags.get("busiest") or [] if r)
        drawn = [group for _, group in busiest]
        rebalanced = set(flags.get("asked") or [])
        return drawn + [g for g in extra if g not in drawn and g in rebalanced]
    rows = metrics.orderBy(F.desc("rebalances"), "group").limit(PAGE_GROUPS).collect()
    drawn = [r["group"] for r in rows if r["rebalances"]]
    extra = [g for g in extra if g not in drawn]
    if extra:
        found = metrics.where(F.col("group").isin(extra) & (F.col("rebalances") > 0))
        rebalanced = {r["group"] for r in found.select("group").collect()}
        drawn += [g for g in extra if g in rebalanced]
    return drawn


def collect_stories(
    groups: list[str], ownership: DataFrame, episodes: DataFrame, events: DataFrame,
    last_ts: dict[str, int],
) -> tuple[list[GroupStory], dict[str, list[int]]]:  # fmt: skip
    """The stories of `groups` and, per group, the times of its fenced commits."""
    ranked = F.row_number().over(Window.partitionBy("group").orderBy("start_ts", "member"))
    own = (
        ownership.where(F.col("group").isin(groups))
        .withColumn("n", ranked)
        .where(F.col("n") <= ROWS_PER_GROUP)
        .drop("n")
        .collect()
    )
    eps = (
        episodes.where(F.col("group").isin(groups) & (F.col("episode") <= EPISODES_PER_PAGE))
        .orderBy("group", "episode")
        .collect()
    )
    member_events = (
        events.where(F.col("group").isin(groups) & F.col("type").isin(*MEMBER_EVENT_TYPES))
        .select("group", "ts", "type", "member", "client_id", "reason", "session_timeout_ms")
        .orderBy("group", "ts")
        .collect()
    )
    stories = []
    fenced: dict[str, list[int]] = {g: [] for g in groups}
    for group in groups:
        mine = [e.asDict() for e in member_events if e["group"] == group]
        fenced[group] = [e["ts"] for e in mine if e["type"] == "commit_fenced"]
        stories.append(
            GroupStory(
                group=group,
                ownership=[_plain(r) for r in own if r["group"] == group],
                episodes=[e.asDict() for e in eps if e["group"] == group],
                member_events=[e for e in mine if e["type"] != "commit_fenced"],
                last_ts=last_ts[group],
            )
        )
    return stories, fenced


def _plain(row: Any) -> dict[str, Any]:
    values: dict[str, Any] = row.asDict()
    values["partitions"] = [(p["topic"], p["partition"]) for p in values["partitions"]]
    return values


def _time(ts: int | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def fenced_per_episode(episodes: list[dict[str, Any]], fenced: list[int]) -> list[int]:
    """How many fenced commits fall in each episode's stretch: from its start to the next
    episode's start (a commit of an old generation is fenced after the rebalance)."""
    starts = [e["start_ts"] for e in episodes]
    counts = [0] * len(episodes)
    for ts in fenced:
        index = bisect_right(starts, ts) - 1
        if index >= 0:
            counts[index] += 1
    return counts


EPISODE_HEADERS = [
    "episode", "start (UTC)", "duration (ms)", "trigger", "outcome", "members before",
    "members after", "partitions moved", "time without partitions (ms, per member)",
    "fenced commits",
]  # fmt: skip


def episode_rows(story: GroupStory, fenced: list[int]) -> list[list[Any]]:
    rows = []
    for e, fenced_count in zip(story.episodes, fenced_per_episode(story.episodes, fenced),
                               strict=True):  # fmt: skip
        waits = e["stop_the_world_ms"] or {}
        per_member = ", ".join(
            f"{story.labels.get(m, m)} {ms:,}"
            for m, ms in sorted(waits.items(), key=lambda i: i[0])
        )
        rows.append([
            e["episode"], _time(e["start_ts"]), e["duration_ms"], e["trigger"], e["outcome"],
            e["members_before"], e["members_after_count"], e["partitions_moved"], per_member,
            fenced_count,
        ])  # fmt: skip
    return rows


def write_group_pages(
    out_dir: Path, stories: list[GroupStory], fenced: dict[str, list[int]], *, partitions: bool
) -> list[GroupPage]:
    """One page and timeline per story (and the partition view with `partitions`)."""
    pages = []
    for n, story in enumerate(stories, start=1):
        stem = f"group-{n:02d}"  # section ids stay unique when the pages join one file
        timeline, page_name = f"ownership-{n:02d}.png", f"{stem}.html"
        draw_timeline(story, out_dir / timeline)
        extra = ""
        if partitions:
            partition_png = f"partitions-{n:02d}.png"
            draw_partitions(story, out_dir / partition_png)
            extra = (
                f'<section id="{stem}-partitions"><h2>Partitions</h2><img src="{partition_png}" '
                f'alt="which member held each partition of {html.escape(story.group)}"></section>'
            )
        shown = len(story.episodes)
        first = f" (the first {shown})" if shown >= EPISODES_PER_PAGE else ""
        body = f"""<p><a href="index.html">← report</a></p>
<h1>Group {html.escape(story.group)}</h1>
<div class="side-by-side">
<section id="{stem}-episodes"><h2>Episodes{first}</h2>
{html_table(EPISODE_HEADERS, episode_rows(story, fenced[story.group]))}</section>
<section id="{stem}-timeline"><h2>Ownership</h2>
<img src="{timeline}" alt="ownership timeline of {html.escape(story.group)}"></section>
</div>
{extra}"""
        (out_dir / page_name).write_text(page(f"Group {story.group}", body), encoding="utf-8")
        pages.append(GroupPage(story.group, page_name, timeline))
    return pages
