"""The sweep's comparison plot (`OUT/sweep.png`), drawn from the small aggregates only.

Four panels, ours beside kafka-python's: balance, moves over the minimum, compute time against
group size (log-log), and rack locality. Inputs are the collected summary rows (one per assignor,
subscription kind and rack count) and the per-size medians (a few per assignor and scenario size).

Summary rows with and without racks answer different questions (with racks, KIP-881 assignors
may move more to gain locality), so no bar pools them: balance shows the rows of the smallest
rack count (no racks in a default sweep, said in the title: KIP-881 ranks balance first, so racks
barely change it, and the table has the rest); moves over the minimum shows one bar per rack
count, which is the trade-off to see; rack locality shows only the rows with racks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter

KIND_SHADES = {
    "equal": ("tab:blue", "tab:green", "tab:cyan", "tab:olive"),
    "mixed": ("tab:orange", "tab:red", "tab:pink", "tab:brown"),
}
"""Bar colour by subscription kind, then by the rack count's rank in the sweep: the same pair
has the same colour in every panel (default sweep: blue and orange without racks, green and red
with 3 racks)."""
ALGORITHM_COLOURS = [
    "tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
    "tab:olive", "tab:cyan", "tab:grey",
]  # fmt: skip
PEER_HATCH = "//"


@dataclass(frozen=True)
class Series:
    """One bar per assignor: the summary rows of one subscription kind and rack count."""

    subscriptions: str
    racks: int
    label: str
    colour: str


def racks_text(racks: int) -> str:
    return "no racks" if racks == 0 else f"{racks} racks"


def _assignors(summary: list[Any]) -> list[str]:
    """Assignor labels in summary order (ours first within each algorithm)."""
    return list(dict.fromkeys(r["assignor"] for r in summary))


def _peer(summary: list[Any], assignor: str) -> bool:
    return any(r["assignor"] == assignor and r["implementation"] != "rebalance" for r in summary)


def _series(
    summary: list[Any], kinds: list[str], racks: list[int], *, label_racks: bool
) -> list[Series]:
    """Every (kind, rack count) pair of these that has summary rows, coloured by `KIND_SHADES`."""
    all_racks = sorted({r["racks"] for r in summary})
    present = {(r["subscriptions"], r["racks"]) for r in summary}
    series = []
    for kind in kinds:
        for count in racks:
            if (kind, count) in present:
                shades = KIND_SHADES.get(kind, ("tab:grey",))
                colour = shades[all_racks.index(count) % len(shades)]
                label = f"{kind}, {racks_text(count)}" if label_racks else f"{kind} subscriptions"
                series.append(Series(kind, count, label, colour))
    return series


def count_label(value: float) -> str:
    """A bar's value: exact below 1,000 (0 against 108 matters), compact above (7,992 -> 8.0k).

    Exact thousands are wider than a bar when two bars stand side by side, and their labels ran
    into each other.
    """
    return f"{value:.0f}" if abs(value) < 1000 else f"{value / 1000:.1f}k"


def _legend(ax: Axes, series: list[Series]) -> None:
    handles = [Patch(facecolor=s.colour, edgecolor="black", label=s.label) for s in series]
    handles.append(
        Patch(facecolor="white", edgecolor="black", hatch=PEER_HATCH, label="kafka-python")
    )
    ax.legend(handles=handles, fontsize="small", loc="upper center", ncol=min(len(handles), 3))


def _bars(
    ax: Axes,
    summary: list[Any],
    column: str,
    series: list[Series],
    ylabel: str,
    title: str,
    labelled: bool = False,
    top: float | None = None,
) -> None:
    """Grouped bars: one group per assignor, one bar per series; peers hatched.

    `labelled` writes each bar's value on it; `top` is the data's upper bound (1 for fractions),
    else the tallest bar; the axis goes above it by room for the legend.
    """
    names = _assignors(summary)
    width = 0.8 / len(series)
    values = {(r["assignor"], r["subscriptions"], r["racks"]): r[column] for r in summary}
    for k, one in enumerate(series):
        offset = (k - (len(series) - 1) / 2) * width
        for i, name in enumerate(names):
            value = values.get((name, one.subscriptions, one.racks))
            if value is not None:
                hatch = PEER_HATCH if _peer(summary, name) else None
                bars = ax.bar(
                    i + offset, value, width, color=one.colour, hatch=hatch, edgecolor="black"
                )
                if labelled:  # small values (0 moves over the minimum) stay readable
                    ax.bar_label(
                        bars,
                        fmt=count_label,
                        fontsize="x-small",
                        rotation=90 if len(series) > 2 else 0,  # thin bars: labels upright
                        padding=2,
                    )
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    rows = 1 + len(series) // 3  # legend rows above the bars (series + the hatch, 3 a row)
    highest = top if top is not None else max(ax.get_ylim()[1], 1e-9)
    ax.set_ylim(0, highest * (1.1 + 0.12 * rows))
    _legend(ax, series)


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
    ax.set_xlabel("group size: members x partitions (median over its scenarios, racks or not)")
    ax.set_ylabel("median compute per step (ms, log)")
    ax.set_title("Compute time (solid: rebalance, dashed: kafka-python)")
    if by_size:
        ax.legend(fontsize="x-small", ncol=3, loc="upper left")


def _message(ax: Axes, title: str, text: str) -> None:
    ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def draw(summary: list[Any], by_size: list[Any]) -> Figure:
    """The four panels as a figure (see the module docstring for which rows each one shows)."""
    kinds = list(dict.fromkeys(r["subscriptions"] for r in summary))
    all_racks = sorted({r["racks"] for r in summary})
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    if summary:
        base = all_racks[0]
        _bars(
            axes[0][0], summary, "balance_mean",
            _series(summary, kinds, [base], label_racks=False),
            "mean max-min partitions per member",
            f"Balance, {racks_text(base)} (lower is better; hatched: kafka-python)",
        )  # fmt: skip
    else:
        _message(axes[0][0], "Balance", "no summary rows")
    bounded = sorted({r["racks"] for r in summary if r["excess_moves"] is not None})
    if bounded:
        _bars(
            axes[0][1], summary, "excess_moves",
            _series(summary, ["equal"], bounded, label_racks=True),
            "partitions moved beyond the minimum",
            "Moves over the minimum (churn steps, equal subscriptions)", labelled=True,
        )  # fmt: skip
    else:
        _message(axes[0][1], "Moves over the minimum", "no churn steps with equal subscriptions")
    _compute(axes[1][0], by_size)
    racked = [n for n in all_racks if n > 0]
    if racked:
        rack_title = racks_text(racked[0]) if len(racked) == 1 else "with racks"
        _bars(
            axes[1][1], summary, "rack_local_mean",
            _series(summary, kinds, racked, label_racks=len(racked) > 1),
            "fraction of partitions on a local replica",
            f"Rack locality, {rack_title} (higher is better)", top=1.0,
        )  # fmt: skip
    else:
        _message(axes[1][1], "Rack locality", "no racks in this sweep (--racks 0)")
    fig.suptitle("Assignor sweep: rebalance vs kafka-python")
    fig.tight_layout()
    return fig


def write_plot(summary: list[Any], by_size: list[Any], path: Path) -> Path:
    """Draw the four panels into `path` (PNG); returns it."""
    fig = draw(summary, by_size)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
