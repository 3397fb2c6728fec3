"""The HTML report and its PNG plots, drawn from small aggregates collected to the driver.

Only bounded tables reach the driver: the group summary (top groups), histogram bins computed
by Spark, and the episodes of the few groups drawn on the timeline.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.patches import Patch
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

TIMELINE_GROUPS = 8
TIMELINE_EPISODES_PER_GROUP = 500
TABLE_GROUPS = 50
MOVED_BARS = 60
MS_PER_DAY = 86_400_000
OUTCOME_COLOURS = {
    "completed": "tab:green",
    "superseded": "tab:orange",
    "empty": "tab:grey",
    "unfinished": "tab:red",
    "failed": "tab:purple",
}


@dataclass(frozen=True)
class LogCounts:
    """How the input lines were accounted for."""

    lines: int
    events: int
    quarantined: int


def _date_number(ts_ms: int) -> float:
    """An event time (ms since the epoch) as matplotlib's date number."""
    return float(mdates.date2num(datetime.fromtimestamp(ts_ms / 1000, tz=UTC)))  # type: ignore[no-untyped-call]


def _timeline(episodes: DataFrame, metrics: DataFrame, path: Path) -> list[str]:
    busiest = [
        r["group"]
        for r in metrics.orderBy(F.desc("rebalances"), "group").limit(TIMELINE_GROUPS).collect()
        if r["rebalances"]
    ]
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.6 * max(len(busiest), 1)))
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
        locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
        legend = [Patch(color=colour, label=name) for name, colour in OUTCOME_COLOURS.items()]
        ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    ax.set_xlabel("time (UTC)")
    ax.set_title(f"Rebalance timeline of the busiest groups (up to {TIMELINE_GROUPS})")
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return busiest


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
        ax.bar(lefts, [r["count"] for r in bins], width=widths, align="edge", edgecolor="black")
        ax.set_xscale("log")
    ax.set_xlabel("episode duration (ms)")
    ax.set_ylabel("episodes")
    ax.set_title("Rebalance duration distribution")
    fig.tight_layout()
    fig.savefig(path)
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
        ax.bar([r["partitions_moved"] for r in counts], [r["count"] for r in counts])
    ax.set_xlabel("partitions moved in the episode")
    ax.set_ylabel("episodes")
    ax.set_title("Partitions moved per rebalance")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:,.1f}"
    if isinstance(value, list):
        return html.escape(", ".join(f"{t['trigger']} ({t['count']})" for t in value))
    return "" if value is None else html.escape(str(value))


def html_table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


GROUP_COLUMNS = [
    "group", "rebalances", "completed", "superseded", "empty", "unfinished",
    "rebalances_per_hour", "duration_p50_ms", "duration_p95_ms", "duration_p99_ms",
    "partitions_moved", "fenced_commits", "expirations", "top_triggers",
]  # fmt: skip


def write_report(
    out_dir: Path, counts: LogCounts, metrics: DataFrame, episodes: DataFrame,
    quarantine_summary: DataFrame, *, sections: Sequence[str] = (),
) -> Path:  # fmt: skip
    """Draw the three plots and write `index.html` beside them; returns the page's path.
    `sections` are HTML fragments of other modules (their plots already in `out_dir`), placed
    before the quarantined lines."""
    out_dir.mkdir(parents=True, exist_ok=True)
    busiest = _timeline(episodes, metrics, out_dir / "timeline.png")
    _duration_histogram(episodes, out_dir / "durations.png")
    _moved_histogram(episodes, out_dir / "partitions_moved.png")
    top = metrics.orderBy(F.desc("rebalances"), "group").limit(TABLE_GROUPS).collect()
    group_rows = [[r[c] for c in GROUP_COLUMNS] for r in top]
    bad = quarantine_summary.collect()
    bad_rows = [[r["reason"], r["lines"], " | ".join(r["examples"])] for r in bad]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Rebalance report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:90%}}</style></head><body>
<h1>Rebalance report</h1>
<p>{counts.lines:,} input lines: {counts.events:,} valid events,
{counts.quarantined:,} quarantined (kept in <code>quarantine/</code> with their reason).</p>
<h2>Groups (the {TABLE_GROUPS} that rebalance most)</h2>
{html_table(GROUP_COLUMNS, group_rows)}
<h2>Timeline</h2><p>Groups: {html.escape(", ".join(busiest)) or "none"}</p>
<img src="timeline.png" alt="rebalance timeline per group">
<h2>Duration distribution</h2><img src="durations.png" alt="episode durations">
<h2>Partitions moved per rebalance</h2>
<img src="partitions_moved.png" alt="partitions moved per episode">
{"".join(sections)}
<h2>Quarantined lines</h2>
{html_table(["reason", "lines", "examples"], bad_rows) if bad_rows else "<p>none</p>"}
</body></html>
"""
    page_path = out_dir / "index.html"
    page_path.write_text(page, encoding="utf-8")
    return page_path
