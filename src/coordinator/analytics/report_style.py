"""How the report's plots look: colours that survive colour blindness, sizes readable on a laptop
and in print, integer ticks for counts, and time axes in units a person reads.

The palette is Okabe and Ito's eight colours, chosen to stay apart under the common forms of
colour blindness (and in greyscale print, with the outcome hatches); continuous values use
`cividis`, designed for the same. One size of text everywhere: 10 pt at 110 dpi.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import matplotlib
import matplotlib.style

matplotlib.use("Agg")
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#000000")  # fmt: skip
OUTCOME_COLOURS = {
    "completed": "#009E73",
    "superseded": "#E69F00",
    "empty": "#999999",
    "unfinished": "#D55E00",
    "failed": "#CC79A7",
}
EPISODE_SHADE = "#56B4E9"
SEQUENTIAL_MAP = "cividis"
DPI = 110
STYLE: dict[str, Any] = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": DPI,
}
matplotlib.style.use(STYLE)  # the report's plots only run in report jobs (Agg, no display)


def integer_ticks(axis: Any) -> None:
    """Counts have integer ticks only (no 0.25 episodes)."""
    axis.set_major_locator(MaxNLocator(integer=True))


def spans_decades(values: list[float], decades: float = 2.0) -> bool:
    """Whether positive values span more than `decades` powers of ten: then a log scale."""
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) >= 10**decades


@dataclass(frozen=True)
class TimeAxis:
    """Time since `origin_ms` in one unit chosen from the span (s, min, h or days)."""

    origin_ms: int
    unit: str
    ms_per_unit: int

    @classmethod
    def over(cls, first_ms: int, last_ms: int) -> TimeAxis:
        span = max(last_ms - first_ms, 1)
        for unit, ms in (("s", 1000), ("min", 60_000), ("h", 3_600_000)):
            if span <= 120 * ms:
                return cls(first_ms, unit, ms)
        return cls(first_ms, "days", 86_400_000)

    def at(self, ts_ms: int) -> float:
        return (ts_ms - self.origin_ms) / self.ms_per_unit

    def length(self, ms: int) -> float:
        return ms / self.ms_per_unit

    @property
    def label(self) -> str:
        start = datetime.fromtimestamp(self.origin_ms / 1000, tz=UTC)
        return f"time since {start:%Y-%m-%d %H:%M:%S} UTC ({self.unit})"


def save(fig: Figure, path: Any) -> None:
    fig.savefig(path, bbox_inches="tight", dpi=DPI)


def outcome_legend(ax: Axes, outcomes: list[str]) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=OUTCOME_COLOURS.get(o, "black"), label=o) for o in outcomes]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
