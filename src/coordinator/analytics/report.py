"""The HTML report and its PNG plots, drawn from small aggregates collected to the driver.

Only bounded tables reach the driver: the group summary (top groups), histogram bins computed
by Spark, the episodes of the few groups drawn on the timeline, and the ownership rows, episodes
and member events of the busiest groups (their pages, `group_pages`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from coordinator.analytics.group_pages import collect_stories, drawn_groups, write_group_pages
from coordinator.analytics.protocols import protocols_section
from coordinator.analytics.report_html import counted, html_table, inline_images, page
from coordinator.analytics.report_style import (
    OUTCOME_COLOURS,
    integer_ticks,
    outcome_legend,
    save,
    spans_decades,
)

TIMELINE_GROUPS = 8
TIMELINE_EPISODES_PER_GROUP = 500
TABLE_GROUPS = 50
MOVED_BARS = 60
MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class LogCounts:
    """How the input lines were accounted for."""

    lines: int
    events: int
    quarantined: int


@dataclass(frozen=True)
class ReportInputs:
    """The tables the ownership and comparison parts of the report read: `ownership/`, the valid
    events (only the busiest groups' member events, `group_pages.MEMBER_EVENT_TYPES`, are
    collected from them: the pipeline passes only those types), `protocols/`."""

    ownership: DataFrame
    events: DataFrame
    protocols: DataFrame | None = None
    requested: tuple[str, ...] = ()
    """Groups asked for (`report --group`) to draw besides the busiest."""
    drawn: tuple[str, ...] | None = None
    """The groups to draw, as the pipeline picked them for `ownership/` (None: picked here from
    the `groups` table, `group_pages.drawn_groups`)."""


def _date_number(ts_ms: int) -> float:
    """An event time (ms since the epoch) as matplotlib's date number."""
    return float(mdates.date2num(datetime.fromtimestamp(ts_ms / 1000, tz=UTC)))  # type: ignore[no-untyped-call]


def _busiest(metrics: DataFrame, count: int) -> list[str]:
    rows = metrics.orderBy(F.desc("rebalances"), "group").limit(count).collect()
    return [r["group"] for r in rows if r["rebalances"]]


def _timeline(episodes: DataFrame, busiest: list[str], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.5 * max(len(busiest), 1)))
    if busiest:
        rows = (
            episodes.where(F.col("group").isin(busiest))
            .where(F.col("episode") <= TIMELINE_EPISODES_PER_GROUP)
            .select("group", "start_ts", "end_ts", "outcome")
            .collect()
        )
        last_ts = max((r["end_ts"] or r["start_ts"]) for r in rows)
        for r in rows:
            y = busiest.index(r["group"])
            end = r["end_ts"] if r["end_ts"] is not None else last_ts
            # Dates on the axis: matplotlib counts days; an episode is at least visible (1 ms).
            width = max(end - r["start_ts"], 1) / MS_PER_DAY
            colour = OUTCOME_COLOURS.get(r["outcome"], "black")
            left = _date_number(r["start_ts"])
            ax.barh(y, width, left=left, color=colour, height=0.6)
            # A tick at every start: most rebalances last milliseconds, too short for a bar.
            ax.plot([left], [y], marker="|", markersize=14, color=colour)
        ax.set_yticks(range(len(busiest)), busiest)
        ax.invert_yaxis()
        locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
        outcome_legend(ax, list(OUTCOME_COLOURS))
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel("group")
    ax.set_title(timeline_title(len(busiest)))
    save(fig, path)
    plt.close(fig)


def _duration_histogram(episodes: DataFrame, path: Path) -> None:
    """Durations binned by Spark into quarter decades (log scale): 1, 1.8, 3.2, 5.6, 10 ms..."""
    bins = (
        episodes.where(F.col("duration_ms").isNotNull())
        .select(F.floor(F.log10(F.col("duration_ms") + 1) * 4).alias("bin"))
        .groupBy("bin")
        .count()
        .orderBy("bin")
        .collect()
    )
    fig, ax = plt.subplots(figsize=(8, 4))
    if bins:
        lefts = [10 ** (r["bin"] / 4) for r in bins]
        widths = [10 ** ((r["bin"] + 1) / 4) - left for r, left in zip(bins, lefts, strict=True)]
        counts = [r["count"] for r in bins]
        ax.bar(lefts, counts, width=widths, align="edge", color="#0072B2", edgecolor="white")
        ax.set_xscale("log")
        if spans_decades(counts):
            ax.set_yscale("log")
    integer_ticks(ax.yaxis)
    ax.set_xlabel("episode duration (ms, log scale)")
    ax.set_ylabel("episodes (count)")
    ax.set_title("Rebalance duration distribution")
    save(fig, path)
    plt.close(fig)


def _moved_histogram(episodes: DataFrame, path: Path) -> None:
    counts = (
        episodes.where(F.col("partitions_moved").isNotNull())
        .groupBy("partitions_moved")
        .count()
        .orderBy(F.desc("count"))
        .limit(MOVED_BARS)
        .collect()
    )
    fig, ax = plt.subplots(figsize=(8, 4))
    if counts:
        heights = [r["count"] for r in counts]
        ax.bar([r["partitions_moved"] for r in counts], heights, color="#0072B2", width=0.8)
        if spans_decades(heights):
            ax.set_yscale("log")
    integer_ticks(ax.xaxis)
    integer_ticks(ax.yaxis)
    ax.set_xlabel("partitions moved in the episode (count)")
    ax.set_ylabel("episodes (count)")
    ax.set_title("Partitions moved per rebalance")
    save(fig, path)
    plt.close(fig)


GROUP_COLUMNS = [
    "group", "rebalances", "completed", "superseded", "empty", "unfinished",
    "rebalances_per_hour", "duration_p50_ms", "duration_p95_ms", "duration_p99_ms",
    "partitions_moved", "fenced_commits", "expirations", "top_triggers",
]  # fmt: skip


def _ownership_section(
    out_dir: Path, inputs: ReportInputs, metrics: DataFrame, episodes: DataFrame,
    *, partitions: bool, self_contained: bool,
) -> tuple[str, str]:  # fmt: skip
    """The index's ownership section and, for a self-contained report, the group pages' bodies
    to append to it."""
    groups = (
        list(inputs.drawn) if inputs.drawn is not None else drawn_groups(metrics, inputs.requested)
    )
    missing = [g for g in dict.fromkeys(inputs.requested) if g not in groups]
    absent = (
        f"<p>Asked for, without a rebalance in this log: {html.escape(', '.join(missing))}</p>"
        if missing
        else ""
    )
    if not groups:
        return '<section id="ownership"><h2>Who owned what, when</h2><p>no rebalances</p>' \
            f"{absent}</section>", ""  # fmt: skip
    last_ts = {
        r["group"]: r["last_ts"]
        for r in metrics.where(F.col("group").isin(groups)).select("group", "last_ts").collect()
    }
    stories, fenced = collect_stories(groups, inputs.ownership, episodes, inputs.events, last_ts)
    pages = write_group_pages(out_dir, stories, fenced, partitions=partitions)
    items = []
    appended = []
    for p in pages:
        target = f"#{p.page.removesuffix('.html')}" if self_contained else p.page
        items.append(
            f'<h3><a href="{target}">{html.escape(p.group)}</a></h3>'
            f'<img src="{p.timeline}" alt="ownership timeline of {html.escape(p.group)}">'
        )
        if self_contained:
            text = (out_dir / p.page).read_text(encoding="utf-8")
            body = text[text.index("<body>") + 6 : text.index("</body>")]
            body = body.replace('<a href="index.html">← report</a>', '<a href="#">↑ top</a>')
            appended.append(f'<section id="{p.page.removesuffix(".html")}">{body}</section>')
    section = f"""<section id="ownership"><h2>Who owned what, when</h2>
<p>{_busiest_phrase(len(pages))} (and those asked for with <code>--group</code>):
one row per member, a bar while it owns partitions (labelled with them where they fit), blank
while it owns none; rebalances shaded with their trigger. Each title opens the group's page with
its episodes.</p>{absent}
{"".join(items)}</section>"""
    return section, "".join(appended)


def groups_heading(shown: int, left_out: bool) -> str:
    """The groups table's title: "(the 50 that rebalance most)" only when some were left out."""
    return f"Groups (the {shown} that rebalance most)" if left_out else "Groups"


def timeline_title(shown: int) -> str:
    """The timeline's title, agreeing with how many groups it shows."""
    if shown == 1:
        return "Rebalance episodes of the one group that rebalanced"
    return (
        f"Rebalance episodes of the {shown} groups that rebalance most"
        if shown
        else "No rebalances"
    )


def _busiest_phrase(count: int) -> str:
    return "The one group" if count == 1 else f"The {count} groups that rebalance most"


def write_report(
    out_dir: Path, counts: LogCounts, metrics: DataFrame, episodes: DataFrame,
    quarantine_summary: DataFrame, *, sections: Sequence[str] = (),
    inputs: ReportInputs | None = None, partitions: bool = False, self_contained: bool = False,
) -> Path:  # fmt: skip
    """Draw the plots and write `index.html` beside them; returns the page's path.

    `sections` are HTML fragments of other modules (their plots already in `out_dir`), placed
    before the quarantined lines. With `inputs`, the busiest groups get an ownership timeline
    and a page each (with `partitions`, a per-partition view too). `self_contained` puts the
    group pages inside `index.html` and inlines every image: one file that shows everything.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    busiest = _busiest(metrics, TIMELINE_GROUPS)
    _timeline(episodes, busiest, out_dir / "timeline.png")
    _duration_histogram(episodes, out_dir / "durations.png")
    _moved_histogram(episodes, out_dir / "partitions_moved.png")
    # One more than the table holds: whether some were left out, without counting them all.
    top = metrics.orderBy(F.desc("rebalances"), "group").limit(TABLE_GROUPS + 1).collect()
    left_out = len(top) > TABLE_GROUPS
    group_rows = [[r[c] for c in GROUP_COLUMNS] for r in top[:TABLE_GROUPS]]
    bad = quarantine_summary.collect()
    bad_rows = [[r["reason"], r["lines"], " | ".join(r["examples"])] for r in bad]
    ownership, group_pages, protocols = "", "", ""
    if inputs is not None and inputs.protocols is not None:
        protocols = protocols_section(inputs.protocols, out_dir)
    if inputs is not None:
        ownership, group_pages = _ownership_section(
            out_dir, inputs, metrics, episodes, partitions=partitions,
            self_contained=self_contained,
        )  # fmt: skip
    read = f"{counted(counts.lines, 'input line')}: {counted(counts.events, 'valid event')}"
    body = f"""<h1>Rebalance report</h1>
<section id="summary"><p>{read},
{counts.quarantined:,} quarantined (kept in <code>quarantine/</code> with their reason).</p>
</section>
<section id="groups"><h2>{groups_heading(len(group_rows), left_out)}</h2>
{html_table(GROUP_COLUMNS, group_rows)}</section>
{ownership}
{protocols}
<section id="timeline"><h2>Timeline</h2><p>Groups: {html.escape(", ".join(busiest)) or "none"}</p>
<img src="timeline.png" alt="rebalance timeline per group"></section>
<section id="durations"><h2>Duration distribution</h2>
<img src="durations.png" alt="episode durations"></section>
<section id="partitions-moved"><h2>Partitions moved per rebalance</h2>
<img src="partitions_moved.png" alt="partitions moved per episode"></section>
{"".join(sections)}
<section id="quarantine"><h2>Quarantined lines</h2>
{html_table(["reason", "lines", "examples"], bad_rows) if bad_rows else "<p>none</p>"}</section>
{group_pages}"""
    text = page("Rebalance report", body)
    if self_contained:
        text = inline_images(text, out_dir)
    page_path = out_dir / "index.html"
    page_path.write_text(text, encoding="utf-8")
    return page_path
