"""The report a person reads, on a real demo run's log (`demo_log/`): every section, a page for the
group with its episodes next to its ownership timeline, the partition view, and the
self-contained variant; and the drawing helpers on their own."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.load import load_events, resolve_input
from coordinator.analytics.ownership_plot import (
    HEATMAP_MEMBERS,
    GroupStory,
    compact,
    draw_timeline,
    member_labels,
)
from coordinator.analytics.pipeline import run_pipeline
from coordinator.analytics.report import LogCounts, ReportInputs, write_report
from coordinator.analytics.report_style import TimeAxis, integer_ticks, spans_decades

DEMO_LOG = Path(__file__).parent / "demo_log"
INDEX_SECTIONS = ("summary", "groups", "ownership", "timeline", "durations", "partitions-moved",
                  "quarantine")  # fmt: skip
LOCAL_IMAGE = re.compile(r'<img src="([^"]+)"')


@pytest.fixture(scope="module")
def demo_report(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("demo-report")
    run_pipeline(spark, str(DEMO_LOG), str(out), out, show_progress=False, partitions=True,
                 groups=["demo-billing", "nobody"])  # fmt: skip
    yield out


@pytest.mark.spark
def test_every_section_and_image_is_there(demo_report: Path) -> None:
    index = (demo_report / "index.html").read_text()
    for section in INDEX_SECTIONS:
        assert f'<section id="{section}">' in index
    for page in ("index.html", "group-01.html"):
        for image in LOCAL_IMAGE.findall((demo_report / page).read_text()):
            assert (demo_report / image).read_bytes().startswith(b"\x89PNG"), image
    assert '<a href="group-01.html">demo-billing</a>' in index
    # the busiest group asked for again is drawn once; one not in the log is named
    assert "group-02.html" not in index
    assert "Asked for, without a rebalance in this log: nobody" in index


@pytest.mark.spark
def test_the_group_page_puts_its_episodes_beside_its_timeline(demo_report: Path) -> None:
    page = (demo_report / "group-01.html").read_text()
    for section in ("episodes", "timeline", "partitions"):
        assert f'<section id="group-01-{section}">' in page
    rows = re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", page)
    assert [int(n) for n, _ in rows] == [1, 2, 3, 4, 5]
    cells = {int(n): re.findall(r"<td>(.*?)</td>", rest) for n, rest in rows}
    # carol's expiry: 23 ms without partitions for the two left, and the zombie commit fenced
    assert cells[4][2:5] == ["member_expired", "completed", "3"]
    assert cells[4][7:9] == ["alice 23, dave 23", "1"]
    assert cells[3][7] == "alice 781, carol 781, dave 781"


@pytest.mark.spark
def test_self_contained_is_one_file(spark: SparkSession, demo_report: Path, tmp_path: Path) -> None:
    page = write_report(
        tmp_path, LogCounts(92, 92, 0), spark.read.parquet(str(demo_report / "groups")),
        spark.read.parquet(str(demo_report / "episodes")),
        spark.read.parquet(str(demo_report / "quarantine_summary")),
        inputs=ReportInputs(spark.read.parquet(str(demo_report / "ownership")),
                            load_events(spark, resolve_input(str(DEMO_LOG))).events),
        self_contained=True,
    )  # fmt: skip
    text = page.read_text()
    images = LOCAL_IMAGE.findall(text)
    assert len(images) == 5 and all(i.startswith("data:image/png;base64,") for i in images)
    assert '<section id="group-01">' in text and '<a href="#group-01">' in text
    assert "index.html" not in text


def test_partitions_are_written_compactly() -> None:
    assert compact([("t", 0), ("t", 1), ("t", 2), ("t", 5), ("t", 7), ("t", 8)]) == "0-2,5,7-8"
    assert compact([("b", 1), ("a", 0)]) == "a 0; b 1"


def test_members_are_labelled_by_client_id_told_apart_when_repeated() -> None:
    events = [
        {"member": "web-1a2b3c4d", "client_id": "web"},
        {"member": "web-9f8e7d6c", "client_id": "web"},
        {"member": "api-00", "client_id": "api"},
    ]
    assert member_labels([], events) == {
        "web-1a2b3c4d": "web (1a2b3c)", "web-9f8e7d6c": "web (9f8e7d)", "api-00": "api",
    }  # fmt: skip


def test_a_large_group_is_drawn_as_a_heatmap(tmp_path: Path) -> None:
    members = HEATMAP_MEMBERS + 10
    rows = [
        {"member": f"m{i}", "client_id": None, "start_ts": 1000 * i, "end_ts": 1000 * i + 500,
         "partitions": [("t", i)], "partition_count": 1, "kept": False}
        for i in range(members)
    ]  # fmt: skip
    story = GroupStory("big", rows, [], [], last_ts=1000 * members)
    draw_timeline(story, tmp_path / "big.png")
    assert (tmp_path / "big.png").read_bytes().startswith(b"\x89PNG")


def test_counts_get_integer_ticks_and_time_a_readable_unit() -> None:
    fig, ax = plt.subplots()
    ax.bar([0, 1], [1, 2])
    integer_ticks(ax.yaxis)
    ticks = ax.get_yticks()
    plt.close(fig)
    assert all(float(t).is_integer() for t in ticks)
    assert spans_decades([1, 5, 300]) and not spans_decades([3, 40])
    assert TimeAxis.over(0, 12_000).unit == "s"
    assert TimeAxis.over(0, 3_600_000).unit == "min"
    assert TimeAxis.over(0, 86_400_000).unit == "h"
    assert TimeAxis.over(0, 30 * 86_400_000).unit == "days"
