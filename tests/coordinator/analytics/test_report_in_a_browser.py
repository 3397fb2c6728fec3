"""The report as a person sees it: rendered by headless Chromium (Debian's package, installed by
scripts/ensure-chromium), every image loaded (naturalWidth > 0) and every section present, read
from the rendered DOM; the group pages and the self-contained file too. The screenshot is kept in
test-output/report-screenshot.png (docs/report-screenshot.png, in the README, is one of them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import Rendered, chromium, render, screenshot
from pyspark.sql import SparkSession
from report_logs import two_protocol_log

from coordinator.analytics.pipeline import run_pipeline

pytestmark = pytest.mark.spark

INDEX_SECTIONS = ["summary", "groups", "ownership", "protocols", "timeline", "durations",
                  "partitions-moved", "zookeeper", "quarantine"]  # fmt: skip
GROUP_SECTIONS = ["episodes", "timeline", "partitions"]
TEST_OUTPUT = Path(__file__).parents[3] / "test-output"
"""Kept after the run (not a pytest temporary directory, which later runs remove)."""


def _group_sections(n: int, names: list[str]) -> list[str]:
    return [f"group-{n:02d}-{name}" for name in names]


def _all_loaded(rendered: Rendered) -> None:
    assert rendered.overflow <= 0, "the page is cut off on the right at 1400 px"
    assert rendered.images
    for image in rendered.images:
        assert image["complete"] and int(str(image["naturalWidth"])) > 0, image


def test_the_report_renders_in_chromium(spark: SparkSession, tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.fail("no chromium: run scripts/ensure-chromium (scripts/bootstrap does)")
    log = two_protocol_log(tmp_path / "events")
    out, single = tmp_path / "report", tmp_path / "single"
    run_pipeline(spark, str(log), str(out), out, show_progress=False, partitions=True)

    index = render(binary, out / "index.html")
    assert index.title == "Rebalance report"
    assert index.sections == INDEX_SECTIONS
    _all_loaded(index)
    assert len(index.images) == 2 + 5  # two groups' timelines, five plots

    for n in (1, 2):
        rendered = render(binary, out / f"group-{n:02d}.html")
        assert rendered.sections == _group_sections(n, GROUP_SECTIONS)
        _all_loaded(rendered)

    run_pipeline(spark, str(log), str(tmp_path / "tables"), single, show_progress=False,
                 self_contained=True)  # fmt: skip
    alone = single / "index.html"
    moved = tmp_path / "attached.html"  # a ticket attachment: nothing beside it
    alone.rename(moved)
    rendered = render(binary, moved)
    assert rendered.sections == [
        *INDEX_SECTIONS,
        *(
            name
            for n in (1, 2)
            for name in [f"group-{n:02d}", *_group_sections(n, GROUP_SECTIONS[:2])]
        ),
    ]
    _all_loaded(rendered)

    TEST_OUTPUT.mkdir(exist_ok=True)
    shot = screenshot(binary, out / "index.html", TEST_OUTPUT / "report-screenshot.png")
    print(f"screenshot: {shot}")
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 20_000
