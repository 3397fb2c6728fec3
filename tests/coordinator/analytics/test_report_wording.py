"""The report's and the demo summary's counts read as English: no "The 1 groups", no "the 50
that rebalance most" over a table of one group, no "1 members"."""

from __future__ import annotations

from coordinator.analytics.report import _busiest_phrase, groups_heading
from coordinator.analytics.report_html import STYLE, html_table
from coordinator.demo.epochs import counted


def test_the_groups_heading_says_the_50_only_when_groups_were_left_out() -> None:
    assert groups_heading(1, 50) == "Groups"
    assert groups_heading(49, 50) == "Groups"
    assert groups_heading(50, 50) == "Groups (the 50 that rebalance most)"


def test_one_group_is_not_the_1_groups() -> None:
    assert _busiest_phrase(1) == "The one group"
    assert _busiest_phrase(3) == "The 3 groups that rebalance most"


def test_counts_agree_with_their_nouns() -> None:
    assert [counted(n, "member") for n in (0, 1, 2)] == ["0 members", "1 member", "2 members"]


def test_a_wide_table_scrolls_in_its_box_instead_of_being_cut_off() -> None:
    table = html_table(["group"] + [f"column {n}" for n in range(30)], [["g", *range(30)]])
    assert table.startswith('<div class="table-scroll"><table>') and table.endswith("</div>")
    assert ".table-scroll{max-width:100%;overflow-x:auto}" in STYLE
