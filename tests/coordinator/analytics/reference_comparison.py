"""Spark's episode and group-metric rows held against the plain-Python reference
(`reference_episodes.py`): every column equal, floats to pytest's relative tolerance."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import Row
from reference_episodes import episodes as reference_episodes
from reference_episodes import group_metrics as reference_metrics

FLOAT_COLUMNS = {"rebalances_per_hour", "duration_p50_ms", "duration_p95_ms", "duration_p99_ms"}


def _normalised(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: pytest.approx(v) if k in FLOAT_COLUMNS and v is not None else v for k, v in row.items()
    }


def assert_episodes_match(episodes: list[Row], log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`episodes` ordered by (group, episode); returns the reference's rows."""
    expected = reference_episodes(log)
    assert len(episodes) == len(expected) > 500
    for actual, wanted in zip(episodes, expected, strict=True):
        row = actual.asDict()
        row["assignment"] = as_json_assignment(row["assignment"])
        row["owned"] = as_json_assignment(row["owned"])
        assert row == wanted, (actual["group"], actual["episode"])
    return expected


def as_json_assignment(assignment: dict[str, Any] | None) -> dict[str, Any] | None:
    """An assignments map as Spark returns it, in the log's JSON form."""
    if assignment is None:
        return None
    return {
        member: None if entries is None else [[e["topic"], e["partitions"]] for e in entries]
        for member, entries in assignment.items()
    }


def assert_metrics_match(
    groups: list[Row], log: list[dict[str, Any]], expected_episodes: list[dict[str, Any]]
) -> None:
    """`groups` ordered by group."""
    actual = []
    for row in groups:
        values = row.asDict()
        values["top_triggers"] = [(t["trigger"], t["count"]) for t in values["top_triggers"]]
        actual.append(values)
    assert actual == [_normalised(r) for r in reference_metrics(log, expected_episodes)]
