"""The report's and the demo summary's counts read as English: no "The 1 groups", no "the 50
that rebalance most" over a table of one group, no "1 members"."""

from __future__ import annotations

from coordinator.analytics.report import _busiest_phrase, groups_heading, timeline_title
from coordinator.analytics.report_html import STYLE, counted, html_table
from coordinator.demo.epochs import counted as demo_counted


def test_the_groups_heading_says_the_50_only_when_groups_were_left_out() -> None:
    assert groups_heading(1, left_out=False) == "Groups"
    assert groups_heading(50, left_out=False) == "Groups"  # exactly 50 groups: none left out
    assert groups_heading(50, left_out=True) == "Groups (the 50 that rebalance most)"


def test_one_group_is_not_the_1_groups() -> None:
    assert _busiest_phrase(1) == "The one group"
    assert _busiest_phrase(3) == "The 3 groups that rebalance most"
    assert timeline_title(1) == "Rebalance episodes of the one group that rebalanced"
    assert timeline_title(3) == "Rebalance episodes of the 3 groups that rebalance most"


def test_counts_agree_with_their_nouns() -> None:
    assert [demo_counted(n, "member") for n in (0, 1, 2)] == ["0 members", "1 member", "2 members"]
    assert [counted(n, "input line") for n in (1, 2, 1000)] == [
        "1 input line", "2 input lines", "1,000 input lines",
    ]  # fmt: skip


def test_a_wide_table_scrolls_in_its_box_instead_of_being_cut_off() -> None:
    table = html_table(["group"] + [f"column {n}" for n in range(30)], [["g", *range(30)]])
    assert table.startswith('<div class="table-scroll"><table>') and table.endswith("</div>")
    assert ".table-scroll{max-width:100%;overflow-x:auto}" in STYLE
