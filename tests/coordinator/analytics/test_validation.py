"""Validation rules, one line per rule: every line is either a valid event or quarantined with the
first reason it breaks, for JSON Lines and for Parquet input alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.load import load_events, resolve_input
from coordinator.analytics.pipeline import run_pipeline
from coordinator.analytics.schema import (
    EVENT_SCHEMA,
    EVENT_TYPES,
    FIELD_CHECK_ORDER,
    GROUP_EVENT_TYPES,
    REQUIRED_BY_TYPE,
    REQUIRED_MASK,
)

pytestmark = pytest.mark.spark


def test_every_type_lists_its_fields_in_the_reporting_order() -> None:
    for name, fields in REQUIRED_BY_TYPE.items():
        positions = [FIELD_CHECK_ORDER.index(f) for f in fields]
        assert positions == sorted(positions), name


def test_masks_hold_exactly_the_required_fields() -> None:
    for name in EVENT_TYPES:
        wanted = set(REQUIRED_BY_TYPE[name]) | ({"group"} if name in GROUP_EVENT_TYPES else set())
        bits = {f for i, f in enumerate(FIELD_CHECK_ORDER) if REQUIRED_MASK[name] >> i & 1}
        assert bits == wanted, name


BASE = {"v": 1, "ts": 5, "node": 1, "group": "g"}
SYNC = BASE | {"type": "sync_completed", "generation": 1}
JOIN = BASE | {"type": "join_completed", "generation": 2, "leader": "a", "protocol": "range"}


def without(event: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in names}


STARTED = BASE | {"type": "rebalance_started"}
LOADED = without(BASE, "group") | {"type": "partition_loaded", "partition": 3}

JSON_CASES: list[tuple[dict[str, Any] | str, str | None]] = [
    (SYNC | {"assignments": {"a": [["t", [0, 1]]], "b": [["u", []]]}}, None),
    (SYNC | {"assignments": {}}, None),
    (SYNC | {"assignments": {"a": None, "b": None}}, None),  # non-consumer protocol
    (SYNC | {"assignments": {"a": [[None, [0]]]}}, "invalid_field:assignments"),
    (SYNC | {"assignments": {"a": [["t", None]]}}, "invalid_field:assignments"),
    (SYNC | {"assignments": {"a": [["t", [0, None]]]}}, "invalid_field:assignments"),
    (SYNC | {"assignments": {"a": None, "b": [["t", [None]]]}}, "invalid_field:assignments"),
    (SYNC, "missing_field:assignments"),
    (JOIN | {"members": ["a"]}, None),
    (JOIN, "missing_field:member_ids"),
    # Version 2: what each member said it owned when it joined (null: it could not say).
    (JOIN | {"v": 2, "members": ["a", "b"], "owned": {"a": [["t", [0]]], "b": None}}, None),
    (JOIN | {"v": 2, "members": ["a"], "owned": {"a": [[None, [0]]]}}, "invalid_field:owned"),
    # Two fields missing: the first in the reporting order is named.
    (without(JOIN, "leader", "generation"), "missing_field:generation"),
    (STARTED | {"trigger": "member_joined", "members": 2}, None),
    (STARTED | {"members": 2}, "missing_field:trigger"),
    (STARTED | {"trigger": "x", "members": "two"}, "missing_field:member_count"),
    (STARTED | {"trigger": "x", "members": "2"}, None),  # string fields take any JSON scalar
    (without(BASE, "group") | {"type": "group_stable"}, "missing_field:group"),
    (LOADED | {"groups": 0}, None),
    (LOADED, "missing_field:groups"),
    (BASE | {"type": "commit_fenced", "code": 22}, "missing_field:error"),
    (BASE | {"type": "offset_commit", "partitions": 3}, None),
    (BASE | {"type": "heartbeat"}, "unknown_type"),
    (BASE | {"v": 3, "type": "group_stable", "generation": 1}, "unknown_version"),
    (without(BASE, "node") | {"type": "group_stable"}, "missing_field:node"),
    (BASE | {"type": "group_stable", "generation": 1, "member": 7}, None),
    (BASE | {"type": "group_stable", "generation": 1, "partition": "x"}, "invalid_field_type"),
    (BASE | {"type": "group_stable", "generation": "x"}, "missing_field:generation"),
    ({"v": 1, "ts": "noon", "node": 1, "type": "group_stable"}, "missing_field:ts"),
    ("[1, 2]", "malformed_json"),
    ("", "blank_line"),
]  # fmt: skip


def _reasons(spark: SparkSession, path: Path) -> tuple[dict[str, str], int]:
    loaded = load_events(spark, resolve_input(str(path)))
    rows = loaded.quarantine.collect()
    return {r["line"]: r["reason"] for r in rows}, loaded.events.count()


def test_each_json_rule_names_the_first_problem(spark: SparkSession, tmp_path: Path) -> None:
    lines = [e if isinstance(e, str) else json.dumps(e) for e, _ in JSON_CASES]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    reasons, valid = _reasons(spark, path)
    assert {line: reasons.get(line) for line in lines} == {
        line: reason for line, (_, reason) in zip(lines, JSON_CASES, strict=True)
    }
    assert valid == sum(1 for _, reason in JSON_CASES if reason is None)
    # A scan of some types tests only the fields those types require, and keeps the same lines.
    loaded = load_events(spark, resolve_input(str(path)))
    for event_type in {e["type"] for e, _ in JSON_CASES if isinstance(e, dict)} & set(EVENT_TYPES):
        wanted = [r for e, r in JSON_CASES if isinstance(e, dict) and e["type"] == event_type]
        assert loaded.events_of([event_type]).count() == wanted.count(None), event_type


def _row(**fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(EVENT_SCHEMA.fieldNames())
    row |= {"v": 1, "ts": 5, "node": 1, "group": "g", "source_file": "f", "source_offset": 0}
    return row | fields


PARQUET_CASES: list[tuple[dict[str, Any], str | None]] = [
    (_row(type="sync_completed", generation=1, assignments={"a": [("t", [0])]}), None),
    (_row(type="sync_completed", generation=1, assignments={"a": None}), None),
    (_row(type="sync_completed", generation=1, assignments={"a": [(None, [0])]}),
     "invalid_field:assignments"),
    (_row(type="sync_completed", generation=1, assignments={"a": [("t", None)]}),
     "invalid_field:assignments"),
    (_row(type="sync_completed", generation=1, assignments={"a": [("t", [1, None])]}),
     "invalid_field:assignments"),
    (_row(type="sync_completed", generation=1, assignments={"a": [None]}),
     "invalid_field:assignments"),
    (_row(type="group_stable", generation=None), "missing_field:generation"),
    (_row(type="member_left", member="m", reason="leave"), None),
    (_row(type="member_left", member=None, reason=None), "missing_field:member"),
    (_row(v=None, type="group_stable", generation=1), "unknown_version"),
    (_row(v=2, type="group_stable", generation=1), None),
    (_row(v=2, type="join_completed", generation=1, leader="a", protocol="p", member_ids=["a"],
          owned={"a": [("t", [0, None])]}), "invalid_field:owned"),
    # Checked whatever the type requires: a scan of the membership events rejects it too.
    (_row(type="member_left", member="m", reason="leave", assignments={"a": [("t", None)]}),
     "invalid_field:assignments"),
]  # fmt: skip


def test_parquet_rows_are_checked_by_the_same_rules(spark: SparkSession, tmp_path: Path) -> None:
    rows = [row | {"source_row": i} for i, (row, _) in enumerate(PARQUET_CASES)]
    table = tmp_path / "events.parquet"
    spark.createDataFrame(rows, EVENT_SCHEMA).coalesce(1).write.parquet(str(table))
    loaded = load_events(spark, resolve_input(str(table)))
    quarantined = {r["source_row"]: r["reason"] for r in loaded.quarantine.collect()}
    valid_rows = {r["source_row"] for r in loaded.events.collect()}
    for i, (_, reason) in enumerate(PARQUET_CASES):
        assert quarantined.get(i) == reason, PARQUET_CASES[i]
        assert (i in valid_rows) == (reason is None), PARQUET_CASES[i]
    # A scan of some types tests only the fields those types require, and keeps the same rows.
    for event_type in {row["type"] for row, _ in PARQUET_CASES}:
        kept = {r["source_row"] for r in loaded.events_of([event_type]).collect()}
        wanted = {i for i, (row, reason) in enumerate(PARQUET_CASES)
                  if row["type"] == event_type and reason is None}  # fmt: skip
        assert kept == wanted, event_type


def test_a_clean_log_gets_an_empty_quarantine_table(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(BASE | {"type": "offset_commit", "partitions": 1}) + "\n")
    out = tmp_path / "out"
    counts = run_pipeline(spark, str(path), str(out), None, show_progress=False)
    assert (counts.lines, counts.events, counts.quarantined) == (1, 1, 0)
    quarantine = spark.read.parquet(str(out / "quarantine"))
    assert quarantine.columns == ["reason", "line", "source_file", "source_offset", "source_row"]
    assert quarantine.count() == 0
    assert spark.read.parquet(str(out / "quarantine_summary")).count() == 0


def test_a_job_of_some_types_reads_their_lines_however_they_are_written(
    spark: SparkSession, tmp_path: Path
) -> None:
    # JSON Lines: lines that cannot hold those types are dropped before parsing (`events_of`);
    # a type spelled with an escape is still read, a member id that names a type is not enough.
    joined = BASE | {"type": "member_joined", "member": "m", "client_id": "c",
                     "instance_id": None, "protocols": ["range"]}  # fmt: skip
    commit = BASE | {"type": "offset_commit", "partitions": 1, "member": "member_joined"}
    escaped = json.dumps(joined).replace('"member_joined"', '"member\\u005fjoined"')
    path = tmp_path / "events.jsonl"
    path.write_text(f"{json.dumps(joined)}\n{escaped}\n{json.dumps(commit)}\n{{broken\n")
    loaded = load_events(spark, resolve_input(str(path)))
    joins = loaded.events_of(["member_joined"]).collect()
    assert [(r["type"], r["member"]) for r in joins] == [("member_joined", "m")] * 2
    assert loaded.events_of(["offset_commit"]).count() == 1
    assert loaded.events.count() == 3


def test_partition_events_are_not_a_group(spark: SparkSession, tmp_path: Path) -> None:
    # `group` is null from the coordinator now; logs written before say "", a valid group id.
    partition_events = [LOADED | {"groups": 0}, LOADED | {"groups": 0, "group": ""}]
    commit = BASE | {"type": "offset_commit", "partitions": 1}
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [*partition_events, commit]))
    out = tmp_path / "out"
    counts = run_pipeline(spark, str(path), str(out), None, show_progress=False)
    assert (counts.lines, counts.events, counts.quarantined) == (3, 3, 0)
    groups = spark.read.parquet(str(out / "groups")).collect()
    assert [(g["group"], g["events"]) for g in groups] == [("g", 1)]


def test_every_declared_event_type_is_read() -> None:
    from rebalance.event_schema import EVENTS

    assert set(EVENT_TYPES) == {str(t) for t in EVENTS}


def test_client_balance_events_are_valid(spark: SparkSession, tmp_path: Path) -> None:
    # As a client-balance group writes them (rebalance.client_balance): node joins, a partition
    # taken with a bootstrap offset, released, and the node's session running out.
    node = BASE | {"group_type": "client-balance", "member": "n0", "generation": 1}
    partition = {"topic": "orders", "topic_partition": 2}
    lines = [
        node | {"type": "member_joined", "client_id": "c", "instance_id": None, "protocols": [],
                "source_count": 3, "node_id": 0},
        node | {"type": "partition_registered", "bootstrap_offset": 10} | partition,
        node | {"type": "partition_released", "reason": "release"} | partition,
        node | {"type": "member_expired", "reason": "session_timeout", "session_timeout_ms": 3000},
    ]  # fmt: skip
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    counts = run_pipeline(spark, str(path), str(tmp_path / "out"), None, show_progress=False)
    assert (counts.lines, counts.events, counts.quarantined) == (4, 4, 0)
