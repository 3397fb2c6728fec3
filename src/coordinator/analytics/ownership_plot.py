"""Pictures of one group's ownership over time, from the rows the report collected for it.

* `draw_timeline`: one row per member, a bar for each stretch it owned partitions (labelled with
  them where they fit), nothing where it owned nothing, every rebalance episode shaded with its
  trigger, joins, leaves and expiries marked, and a crashed member's silence (last heartbeat to
  expiry) drawn as a dashed line;
* `draw_heatmap`: for groups with too many members for one row each, members x time, the colour
  the partitions owned (time-weighted over each bin);
* `draw_partitions`: one row per partition, coloured by the member that held it.

Plain Python in, PNG out: the Spark side is in `group_pages`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from coordinator.analytics.report_style import (
    EPISODE_SHADE,
    OKABE_ITO,
    SEQUENTIAL_MAP,
    TimeAxis,
    save,
)

OWNED = "#0072B2"
KEPT = "#56B4E9"
HEATMAP_MEMBERS = 40
"""Above this many members a group is drawn as a heatmap, not a row per member."""
HEATMAP_BINS = 120
LABELLED_EPISODES = 40
"""Triggers are written on the shaded episodes up to this many; beyond, they would overlap."""
AXIS_CHARACTERS = 110
"""About how many 8-pt characters fit across the plot, to decide which bar labels fit."""
MARKERS = {
    "member_joined": ("^", "#009E73", "joined"),
    "member_left": ("v", "#000000", "left"),
    "member_expired": ("X", "#D55E00", "expired"),
}


@dataclass
class GroupStory:
    """What the report knows about one group: its ownership rows, episodes and member events
    (each a dict of the table's columns), and the last time the log saw it."""

    group: str
    ownership: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    member_events: list[dict[str, Any]]
    last_ts: int
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.labels:
            self.labels = member_labels(self.ownership, self.member_events)

    @property
    def members(self) -> list[str]:
        """Members in the order they first appear (owning or joining)."""
        first: dict[str, int] = {}
        for r in self.ownership:
            first[r["member"]] = min(first.get(r["member"], r["start_ts"]), r["start_ts"])
        for e in self.member_events:
            if e["member"] is not None:
                first[e["member"]] = min(first.get(e["member"], e["ts"]), e["ts"])
        return sorted(first, key=lambda m: (first[m], m))

    def time_axis(self) -> TimeAxis:
        times = [r["start_ts"] for r in self.ownership]
        times += [e["start_ts"] for e in self.episodes] + [e["ts"] for e in self.member_events]
        return TimeAxis.over(min(times, default=self.last_ts), self.last_ts)

    def end_of(self, row: dict[str, Any]) -> int:
        return int(row["end_ts"]) if row["end_ts"] is not None else self.last_ts


def member_labels(
    ownership: Sequence[dict[str, Any]], member_events: Sequence[dict[str, Any]]
) -> dict[str, str]:
    """Member id -> its client id, with the start of the id's tail where client ids repeat."""
    client: dict[str, str] = {}
    for r in [*ownership, *member_events]:
        if r.get("client_id"):
            client.setdefault(r["member"], r["client_id"])
    members = {r["member"] for r in [*ownership, *member_events] if r.get("member") is not None}
    counts: dict[str, int] = {}
    for m in members:
        counts[client.get(m, m)] = counts.get(client.get(m, m), 0) + 1
    labels = {}
    for m in members:
        name = client.get(m, m)
        if counts[name] > 1 or name == m:
            tail = m[len(name) :].lstrip("-") if m.startswith(name) else m
            name = f"{name} ({tail[:6]})" if name != m else (m if len(m) <= 24 else m[:22] + "…")
        labels[m] = name
    return labels


def compact(partitions: Sequence[Any]) -> str:
    """(topic, partition) pairs as `topic 0-3,7`, runs of consecutive partitions joined."""
    by_topic: dict[str, list[int]] = {}
    for p in partitions:
        by_topic.setdefault(p[0], []).append(int(p[1]))
    parts = []
    for topic, numbers in sorted(by_topic.items()):
        runs: list[str] = []
        numbers.sort()
        start = prev = numbers[0]
        for n in [*numbers[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            if n is not None:
                start = prev = n
        parts.append(f"{topic} {','.join(runs)}" if len(by_topic) > 1 else ",".join(runs))
    return "; ".join(parts)


def _shade_episodes(ax: Axes, story: GroupStory, axis: TimeAxis, top: float) -> None:
    """Shade every episode; write its trigger above the plot at `top` (the upper edge of the
    inverted y axis), reading upwards."""
    span = max(axis.at(story.last_ts), 1e-9)
    label = len(story.episodes) <= LABELLED_EPISODES
    for e in story.episodes:
        left = axis.at(e["start_ts"])
        end = e["end_ts"] if e["end_ts"] is not None else story.last_ts
        right = max(axis.at(end), left + span * 0.003)  # a 20 ms rebalance stays visible
        ax.axvspan(left, right, color=EPISODE_SHADE, alpha=0.3, linewidth=0)
        if label:
            ax.text(left, top, f" {e['trigger']}", rotation=90, va="bottom", ha="center",
                    fontsize=8, clip_on=False)  # fmt: skip


def draw_timeline(story: GroupStory, path: Path) -> None:
    """The ownership timeline (see the module docstring), or the heatmap for large groups."""
    members = story.members
    if len(members) > HEATMAP_MEMBERS:
        draw_heatmap(story, path)
        return
    axis = story.time_axis()
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.42 * max(len(members), 1)))
    row = {m: i for i, m in enumerate(members)}
    span = max(axis.at(story.last_ts), 1e-9)
    for r in story.ownership:
        left, width = axis.at(r["start_ts"]), axis.length(story.end_of(r) - r["start_ts"])
        colour = KEPT if r["kept"] else OWNED
        ax.barh(row[r["member"]], max(width, span * 0.002), left=left, height=0.6, color=colour)
        text = compact(r["partitions"])
        if len(text) + 1 < width / span * AXIS_CHARACTERS:
            ax.text(left + width / 2, row[r["member"]], text, ha="center", va="center",
                    fontsize=8, color="white")  # fmt: skip
    expiries = {e["member"]: e for e in story.member_events if e["type"] == "member_expired"}
    for e in story.member_events:
        marker, colour, _ = MARKERS[e["type"]]
        ax.plot([axis.at(e["ts"])], [row[e["member"]]], marker=marker, color=colour,
                markersize=8, linestyle="none", zorder=3)  # fmt: skip
    for member, e in expiries.items():
        timeout = e.get("session_timeout_ms")
        if timeout:
            y = row[member]
            ax.plot([axis.at(e["ts"] - timeout), axis.at(e["ts"])], [y, y], linestyle="--",
                    color=MARKERS["member_expired"][1], linewidth=1.5)  # fmt: skip
    _shade_episodes(ax, story, axis, -0.6)
    ax.set_yticks(range(len(members)), [story.labels.get(m, m) for m in members])
    ax.set_ylim(-0.6, len(members) - 0.4)
    ax.invert_yaxis()
    ax.set_xlim(0, span * 1.01)
    ax.set_xlabel(axis.label)
    ax.set_ylabel("member")
    legend = [
        Patch(color=OWNED, label="owns partitions"),
        Patch(color=KEPT, label="keeps them through a rebalance"),
        Patch(color=EPISODE_SHADE, alpha=0.3, label="rebalance (trigger above)"),
        *(Line2D([], [], marker=m, color=c, linestyle="none", label=t)
          for m, c, t in MARKERS.values()),
        Line2D([], [], linestyle="--", color=MARKERS["member_expired"][1],
               label="silent: last heartbeat to expiry"),
    ]  # fmt: skip
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax.set_title(f"Who owned partitions when: {story.group}", pad=70 if story.episodes else 6)
    save(fig, path)
    plt.close(fig)


def draw_heatmap(story: GroupStory, path: Path) -> None:
    """Members x time, the colour the partitions each owned (time-weighted in each bin)."""
    members = story.members
    axis = story.time_axis()
    first, last = axis.origin_ms, max(story.last_ts, axis.origin_ms + 1)
    width = (last - first) / HEATMAP_BINS
    grid = [[0.0] * HEATMAP_BINS for _ in members]
    row = {m: i for i, m in enumerate(members)}
    for r in story.ownership:
        start, end = r["start_ts"], story.end_of(r)
        low, high = int((start - first) // width), int((end - first) // width)
        for b in range(max(low, 0), min(high, HEATMAP_BINS - 1) + 1):
            bin_start, bin_end = first + b * width, first + (b + 1) * width
            overlap = min(end, bin_end) - max(start, bin_start)
            if overlap > 0:
                grid[row[r["member"]]][b] += r["partition_count"] * overlap / width
    fig, ax = plt.subplots(figsize=(10, 2 + min(len(members), 120) * 0.06))
    image = ax.imshow(grid, aspect="auto", cmap=SEQUENTIAL_MAP, interpolation="nearest",
                      extent=(0, axis.at(last), len(members) - 0.5, -0.5))  # fmt: skip
    colourbar = fig.colorbar(image, ax=ax)
    colourbar.set_label("partitions owned (time-weighted)")
    ax.set_xlabel(axis.label)
    ax.set_ylabel(f"members ({len(members)}, in order of appearance)")
    ax.set_yticks([])
    ax.set_title(f"Partitions owned per member over time: {story.group}")
    save(fig, path)
    plt.close(fig)


def draw_partitions(story: GroupStory, path: Path) -> None:
    """One row per partition, a bar per stretch a member held it, coloured by member."""
    axis = story.time_axis()
    held: list[tuple[tuple[str, int], dict[str, Any]]] = [
        ((p[0], int(p[1])), r) for r in story.ownership for p in r["partitions"]
    ]
    partitions = sorted({tp for tp, _ in held})
    members = [m for m in story.members if any(r["member"] == m for _, r in held)]
    colour = {m: OKABE_ITO[i % len(OKABE_ITO)] for i, m in enumerate(members)}
    hatch = {m: ("" if i < len(OKABE_ITO) else "//") for i, m in enumerate(members)}
    row = {tp: i for i, tp in enumerate(partitions)}
    span = max(axis.at(story.last_ts), 1e-9)
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.3 * max(len(partitions), 1)))
    for tp, r in held:
        width = max(axis.length(story.end_of(r) - r["start_ts"]), span * 0.002)
        ax.barh(row[tp], width, left=axis.at(r["start_ts"]), height=0.7,
                color=colour[r["member"]], hatch=hatch[r["member"]], edgecolor="white")  # fmt: skip
    _shade_episodes(ax, story, axis, -0.6)
    topics = {t for t, _ in partitions}
    names = [str(p) if len(topics) == 1 else f"{t}-{p}" for t, p in partitions]
    ax.set_yticks(range(len(partitions)), names)
    ax.set_ylim(-0.6, len(partitions) - 0.4)
    ax.invert_yaxis()
    ax.set_xlim(0, span * 1.01)
    ax.set_xlabel(axis.label)
    ax.set_ylabel("partition" if len(topics) != 1 else f"partition of {next(iter(topics))}")
    legend = [Patch(facecolor=colour[m], hatch=hatch[m], label=story.labels.get(m, m))
              for m in members[:40]]  # fmt: skip
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False,
              title="held by")  # fmt: skip
    ax.set_title(f"Which member held each partition when: {story.group}",
                 pad=70 if story.episodes else 6)  # fmt: skip
    save(fig, path)
    plt.close(fig)
