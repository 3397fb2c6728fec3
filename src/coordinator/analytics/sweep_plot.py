"""The sweep's comparison plot (`OUT/sweep.png`), drawn from the small aggregates only.

Four panels, ours beside kafka-python's: balance, moves over the minimum, compute time against
group size (log-log), and rack locality. Inputs are the collected summary rows (a few per
assignor) and the per-size medians (a few per assignor and scenario size).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter

KINDS = ("equal", "mixed")
KIND_COLOURS = {"equal": "tab:blue", "mixed": "tab:orange"}
ALGORITHM_COLOURS = [
    "tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
    "tab:olive", "tab:cyan", "tab:grey",
]  # fmt: skip
PEER_HATCH = "//"


def _assignors(summary: list[Any]) -> list[str]:
    """Assignor labels in summary order (ours first within each algorithm)."""
    return list(dict.fromkeys(r["assignor"] for r in summary))


def _peer(summary: list[Any], assignor: str) -> bool:
    return any(r["assignor"] == assignor and r["implementation"] != "rebalance" for r in summary)


def _legend(ax: Axes, kinds: tuple[str, ...]) -> None:
    handles = [
        Patch(facecolor=KIND_COLOURS[k], edgecolor="black", label=f"{k} subscriptions")
        for k in kinds
    ]
    handles.append(
        Patch(facecolor="white", edgecolor="black", hatch=PEER_HATCH, label="kafka-python")
    )
    ax.legend(handles=handles, fontsize="small", loc="upper center", ncol=len(handles))


def _bars(
    ax: Axes,
    summary: list[Any],
    column: str,
    kinds: tuple[str, ...],
    ylabel: str,
    title: str,
    value_format: str | None = None,
) -> None:
    """Grouped bars: one group per assignor, one bar per subscription kind; peers hatched."""
    names = _assignors(summary)
    width = 0.8 / len(kinds)
    values = {(r["assignor"], r["subscriptions"]): r[column] for r in summary}
    for k, kind in enumerate(kinds):
        offset = (k - (len(kinds) - 1) / 2) * width
        for i, name in enumerate(names):
            value = values.get((name, kind))
            if value is not None:
                hatch = PEER_HATCH if _peer(summary, name) else None
                bars = ax.bar(
                    i + offset,
                    value,
                    width,
                    color=KIND_COLOURS[kind],
                    hatch=hatch,
                    edgecolor="black",
                )
                if value_format:  # small values (0 moves over the minimum) stay readable
                    ax.bar_label(bars, fmt=value_format, fontsize="x-small")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_ylim(top=max(ax.get_ylim()[1], 1e-9) * 1.25)  # headroom for the legend
    _legend(ax, kinds)


def _compute(ax: Axes, by_size: list[Any]) -> None:
    """Median compute per step against members x partitions; peers dashed in their colour."""
    algorithms = sorted({r["algorithm"] for r in by_size})
    colour = {a: ALGORITHM_COLOURS[i % len(ALGORITHM_COLOURS)] for i, a in enumerate(algorithms)}
    for name in dict.fromkeys(r["assignor"] for r in by_size):
        points = [r for r in by_size if r["assignor"] == name]
        ours = points[0]["implementation"] == "rebalance"
        ax.plot(
            [r["size"] for r in points],
            [max(r["compute_p50_ms"], 1e-3) for r in points],
            marker="o" if ours else "s",
            linestyle="-" if ours else "--",
            color=colour[points[0]["algorithm"]],
            label=name,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels collide on short ranges
    low, high = ax.get_ylim()
    ax.set_ylim(low, high * 30)  # headroom (log scale) for the legend above the lines
    ax.set_xlabel("group size: members x partitions")
    ax.set_ylabel("median compute per step (ms, log)")
    ax.set_title("Compute time (solid: rebalance, dashed: kafka-python)")
    if by_size:
        ax.legend(fontsize="x-small", ncol=3, loc="upper left")


def _message(ax: Axes, title: str, text: str) -> None:
    ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def write_plot(summary: list[Any], by_size: list[Any], path: Path) -> Path:
    """Draw the four panels into `path` (PNG); returns it."""
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    _bars(
        axes[0][0], summary, "balance_mean", KINDS,
        "mean max-min partitions per member", "Balance (lower is better; hatched: kafka-python)",
    )  # fmt: skip
    if any(r["excess_moves"] is not None for r in summary):
        _bars(
            axes[0][1], summary, "excess_moves", ("equal",),
            "partitions moved beyond the minimum",
            "Moves over the minimum (churn steps, equal subscriptions)", "{:,.0f}",
        )  # fmt: skip
    else:
        _message(axes[0][1], "Moves over the minimum", "no churn steps with equal subscriptions")
    _compute(axes[1][0], by_size)
    if any(r["rack_local_mean"] is not None for r in summary):
        _bars(
            axes[1][1], summary, "rack_local_mean", KINDS,
            "fraction of partitions on a local replica", "Rack locality (higher is better)",
        )  # fmt: skip
        axes[1][1].set_ylim(0, 1.3)
    else:
        _message(axes[1][1], "Rack locality", "no racks in this sweep (--racks 0)")
    fig.suptitle("Assignor sweep: rebalance vs kafka-python")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
