"""The sweep's aggregates, computed by Spark: the summary table, plot series and skip notes.

Summary (`OUT/sweep_summary`), one row per assignor, subscription kind and rack count. Racks are
a key, not pooled: with racks, KIP-881's rack-aware assignors may give up stickiness to bring
partitions onto a local replica, so a rack run's moves answer a different question from a
no-rack run's, and summing them would hide both answers. Per row:

* `scenarios` (with at least one measured step), `steps` (measured), `errors` (steps where the
  assignor raised; its chain stops there), `skipped` (scenarios without rows and why: see notes);
* `all_valid`: every measured step valid and no error;
* `balance_mean`, `balance_max` over measured steps;
* `moved_total` over measured steps; `min_moves_total` and `excess_moves` (moved - minimum) over
  the churn steps whose minimum is known (equal subscriptions), null when there are none;
* `compute_p50_ms`, `compute_p95_ms`: exact percentiles (linear interpolation) per step;
* `rack_local_mean` (null without racks);
* for our assignors, `compute_ratio_vs_peer`: the median, over the steps both measured (same
  scenario and step, hence the same rack count), of our compute time over kafka-python's for the
  same algorithm, and `paired_steps`. Below 1 means ours is faster. A median of per-step ratios
  rather than a ratio of sums, so one slow outlier step (a GC pause, a busy core) does not decide
  it. Null when there is no peer or no common step.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from coordinator.analytics.sweep import KAFKA_PYTHON, OURS
from coordinator.analytics.sweep_group import SCENARIO_COLUMNS

GROUP_KEYS = ["implementation", "algorithm", "assignor", "subscriptions", "racks"]
STEP_KEYS = [*SCENARIO_COLUMNS, "step", "algorithm"]


def _ok() -> Column:
    return F.col("status") == "ok"


def _when_ok(column: str | Column) -> Column:
    value = F.col(column) if isinstance(column, str) else column
    return F.when(_ok(), value)


def _bounded() -> Column:
    """Churn steps measured with a known minimum: where excess moves mean something."""
    return _ok() & (F.col("step") > 0) & F.col("min_moves").isNotNull()


def _aggregates() -> list[Column]:
    compute = F.percentile(_when_ok("compute_ms"), [0.5, 0.95])
    return [
        F.count_distinct(_when_ok(F.struct(*SCENARIO_COLUMNS))).alias("scenarios"),
        F.sum(_ok().cast("long")).alias("steps"),
        F.sum((F.col("status") == "error").cast("long")).alias("errors"),
        F.sum((F.col("status") == "skipped").cast("long")).alias("skipped"),
        F.bool_and("valid").alias("all_valid"),
        F.avg(_when_ok("balance")).alias("balance_mean"),
        F.max(_when_ok("balance")).alias("balance_max"),
        F.sum(_when_ok("moved")).alias("moved_total"),
        F.sum(F.when(_bounded(), F.col("min_moves"))).alias("min_moves_total"),
        F.sum(F.when(_bounded(), F.col("moved") - F.col("min_moves"))).alias("excess_moves"),
        compute[0].alias("compute_p50_ms"),
        compute[1].alias("compute_p95_ms"),
        F.avg(_when_ok("rack_local")).alias("rack_local_mean"),
    ]


def _peer_ratio(rows: DataFrame) -> DataFrame:
    """Median of our compute time over the peer's, per step both measured, per summary row.

    Steps pair within one scenario (the join is on every scenario column, racks included); the
    grouping keeps the rack count too, so each summary row gets the ratio of its own steps.
    """

    def side(implementation: str, name: str) -> DataFrame:
        measured = rows.where(_ok() & (F.col("implementation") == implementation))
        return measured.select(*STEP_KEYS, F.col("compute_ms").alias(name))

    pairs = side(OURS, "ours_ms").join(side(KAFKA_PYTHON, "peer_ms"), STEP_KEYS)
    ratio = F.col("ours_ms") / F.when(F.col("peer_ms") > 0, F.col("peer_ms"))
    return pairs.groupBy("algorithm", "subscriptions", "racks").agg(
        F.percentile(ratio, 0.5).alias("compute_ratio_vs_peer"),
        F.count(F.lit(1)).alias("paired_steps"),
        F.lit(OURS).alias("implementation"),
    )


def summarize(rows: DataFrame) -> DataFrame:
    """One row per assignor, subscription kind and rack count (see the module docstring)."""
    summary = rows.groupBy(*GROUP_KEYS).agg(*_aggregates())
    joined = summary.join(
        _peer_ratio(rows), ["implementation", "algorithm", "subscriptions", "racks"], "left"
    )
    columns = [c for c in summary.columns if c not in GROUP_KEYS]
    return ordered(joined.select(*GROUP_KEYS, *columns, "compute_ratio_vs_peer", "paired_steps"))


def ordered(summary: DataFrame) -> DataFrame:
    """Summary order: by algorithm, ours before the peer, then subscription kind, then racks.

    Parquet keeps no row order, so whoever reads the summary back sorts it again with this.
    """
    return summary.orderBy("algorithm", F.col("implementation") != OURS, "subscriptions", "racks")


def compute_by_size(rows: DataFrame) -> DataFrame:
    """Median compute time per assignor and group size (members x partitions): the plot's lines.

    Over every scenario of that size, with racks or not: a line per rack count would double the
    lines of a panel that already has nine, and the summary has compute per rack count.
    """
    size = F.col("members") * F.col("topics") * F.col("partitions_per_topic")
    return (
        rows.where(_ok())
        .groupBy("assignor", "implementation", "algorithm", size.cast("long").alias("size"))
        .agg(F.percentile("compute_ms", 0.5).alias("compute_p50_ms"))
        .orderBy("assignor", "size")
    )


def notes(rows: DataFrame) -> list[str]:
    """What has no measured rows and why: skipped peers and assignors that raised."""
    problems = (
        rows.where(~_ok())
        .groupBy("assignor", "status")
        .agg(F.count(F.lit(1)).alias("scenarios"), F.min("reason").alias("reason"))
        .orderBy("assignor", "status")
        .collect()
    )
    what = {"skipped": "skipped in", "error": "raised an error in"}
    return [
        f"{r['assignor']}: {what.get(r['status'], r['status'])} {r['scenarios']} scenario(s): "
        f"{r['reason']}"
        for r in problems
    ]


TABLE_COLUMNS = [
    ("assignor", "assignor", "{}"),
    ("subs", "subscriptions", "{}"),
    ("racks", "racks", "{}"),
    ("scen", "scenarios", "{}"),
    ("steps", "steps", "{}"),
    ("valid", "all_valid", "{}"),
    ("bal avg", "balance_mean", "{:.2f}"),
    ("bal max", "balance_max", "{}"),
    ("moved", "moved_total", "{}"),
    ("excess", "excess_moves", "{}"),
    ("p50 ms", "compute_p50_ms", "{:.3f}"),
    ("p95 ms", "compute_p95_ms", "{:.3f}"),
    ("vs peer", "compute_ratio_vs_peer", "{:.3f}"),
    ("rack local", "rack_local_mean", "{:.3f}"),
]


def _text(value: Any, pattern: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return pattern.format(value)


def format_table(summary: list[Any]) -> str:
    """The summary rows as a fixed-width text table (`-` where a value is null)."""
    cells = [[_text(r[column], pattern) for _, column, pattern in TABLE_COLUMNS] for r in summary]
    headers = [header for header, _, _ in TABLE_COLUMNS]
    widths = [max(len(x) for x in column) for column in zip(headers, *cells, strict=True)]
    lines = [headers, *cells]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )
