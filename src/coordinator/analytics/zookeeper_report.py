"""The report's section on ZooKeeper-coordinated groups: a summary table per group and a plot of
every consumer's rebalance runs in the busiest group (when they release, how long they go
without partitions, how many claim rounds failed), drawn from the `zookeeper` and
`zookeeper_runs` tables (`analytics.zookeeper`)."""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Patch
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from coordinator.analytics.report_html import html_table
from coordinator.analytics.zookeeper import zookeeper_group_summary

PLOT_FILE = "zookeeper_runs.png"
PLOT_MEMBERS = 30
PLOT_RUNS = 400
RUN_COLOURS = {"completed": "#009E73", "failed": "#CC79A7", "left": "#999999",
               "open": "#D55E00"}  # fmt: skip
"""From the report's colour-blind-safe palette (`report_style`)."""
SUMMARY_COLUMNS = [
    "group", "episodes", "completed", "runs", "failed_claim_rounds", "retries",
    "rebalance_failures", "zk_ops_per_episode", "duration_p50_ms", "duration_max_ms",
    "time_without_partitions_ms",
]  # fmt: skip


def _plot_runs(runs: DataFrame, group: str, path: Path) -> None:
    rows = (
        runs.where(F.col("group") == group)
        .orderBy("start_ts")
        .limit(PLOT_RUNS)
        .select("member", "start_ts", "end_ts", "outcome", "failed_claim_rounds")
        .collect()
    )
    members = sorted({r["member"] for r in rows})[:PLOT_MEMBERS]
    origin = min(r["start_ts"] for r in rows)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.35 * len(members)))
    for r in rows:
        if r["member"] not in members:
            continue
        y = members.index(r["member"])
        start = (r["start_ts"] - origin) / 1000
        end = ((r["end_ts"] if r["end_ts"] is not None else r["start_ts"]) - origin) / 1000
        colour = RUN_COLOURS.get(r["outcome"], "black")
        ax.barh(y, max(end - start, 0.005), left=start, color=colour, height=0.6)
        if r["failed_claim_rounds"]:
            ax.text(end, y, f" {r['failed_claim_rounds']}x", va="center", fontsize="x-small")
    ax.set_yticks(range(len(members)), members)
    ax.set_ylabel("consumer")
    ax.set_xlabel("seconds since the first rebalance in the log")
    ax.set_title(f"Rebalance runs per consumer of {group} (n x: failed claim rounds)")
    legend = [Patch(color=c, label=name) for name, c in RUN_COLOURS.items()]
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def zookeeper_section(table: DataFrame, runs: DataFrame, out_dir: Path) -> str:
    """The section's HTML; its plot is written to `out_dir`."""
    summary = zookeeper_group_summary(table).collect()
    if not summary:
        return ""
    busiest = max(summary, key=lambda r: (r["runs"], r["group"]))["group"]
    _plot_runs(runs, busiest, out_dir / PLOT_FILE)
    rows = [[r[c] for c in SUMMARY_COLUMNS] for r in summary]
    return f"""<section id="zookeeper"><h2>ZooKeeper-coordinated groups</h2>
<p>Each consumer rebalances alone: a run goes from its release to its claims; an episode is a
stretch of overlapping runs, until the assignment is complete again.</p>
{html_table(SUMMARY_COLUMNS, rows)}
<p>Runs of {html.escape(busiest)}:</p><img src="{PLOT_FILE}" alt="rebalance runs per consumer">
</section>
"""
