"""Episodes and group metrics of a small hand-made log, checked column by column.

Group g1 (eager "range") goes through every outcome: completed, superseded, empty. Group g2
("cooperative-sticky") shows that members who keep partitions do not wait, and ends unfinished.
Group g3 uses a non-consumer protocol, so its moves cannot be counted. The log is split over two
rotated files, and several events share a millisecond so that file order must break ties.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.episodes import build_episodes
from coordinator.analytics.load import LoadedLog, load_events, quarantine_summary, resolve_input
from coordinator.analytics.metrics import group_activity, group_metrics

pytestmark = pytest.mark.spark


def ev(ts: int, type_: str, group: str, generation: int | None = None, **fields: Any) -> str:
    member = fields.pop("member", None)
    event = {"v": 1, "ts": ts, "node": 1, "type": type_, "group": group}
    return json.dumps(event | {"generation": generation, "member": member, **fields})


def tps(*pairs: tuple[str, list[int]]) -> list[list[Any]]:
    return [[topic, partitions] for topic, partitions in pairs]


FIRST_FILE = [
    # g1 episode 1: a new group (generation 0) gets its first member.
    ev(
        1000,
        "member_joined",
        "g1",
        member="A",
        client_id="c",
        instance_id=None,
        protocols=["range"],
    ),
    ev(1000, "rebalance_started", "g1", 0, trigger="member_joined", members=0),
    ev(1100, "join_completed", "g1", 1, leader="A", protocol="range", members=["A"]),
    ev(
        1150,
        "sync_completed",
        "g1",
        1,
        assignments={"A": tps(("t", [0, 1, 2, 3]))},
        sizes={"A": 40},
    ),
    ev(1150, "group_stable", "g1", 1),
    ev(5000, "offset_commit", "g1", 1, member="A", partitions=4),
    # g1 episode 2: B joins, t-2 and t-3 move from A to B.
    ev(
        6000,
        "member_joined",
        "g1",
        member="B",
        client_id="c",
        instance_id=None,
        protocols=["range"],
    ),
    ev(6000, "rebalance_started", "g1", 1, trigger="member_joined", members=1),
    ev(6300, "join_completed", "g1", 2, leader="A", protocol="range", members=["A", "B"]),
    ev(
        6400,
        "sync_completed",
        "g1",
        2,
        assignments={"A": tps(("t", [0, 1])), "B": tps(("t", [2, 3]))},
        sizes={},
    ),
    ev(6450, "group_stable", "g1", 2),
    ev(7000, "commit_fenced", "g1", 1, member="A", error="ILLEGAL_GENERATION", code=22),
    # g1 episode 3: B expires; superseded by episode 4 before any join completes.
    ev(9000, "member_expired", "g1", 2, member="B", reason="session_timeout"),
    ev(9000, "rebalance_started", "g1", 2, trigger="member_expired", members=2),
    "",
    "this is not json",
    ev(
        9500,
        "member_joined",
        "g1",
        member="C",
        client_id="c",
        instance_id=None,
        protocols=["range"],
    ),
    ev(9500, "rebalance_started", "g1", 2, trigger="member_joined", members=2),
    ev(9800, "join_completed", "g1", 3, leader="A", protocol="range", members=["A", "C"]),
    ev(
        9900,
        "sync_completed",
        "g1",
        3,
        assignments={"A": tps(("t", [0, 1])), "C": tps(("t", [2, 3]))},
        sizes={},
    ),
    ev(10000, "group_stable", "g1", 3),
    # g1 episode 5: everyone leaves, the group ends empty and releases all 4 partitions (to
    # nobody: they have not moved).
    ev(20000, "member_left", "g1", 3, member="A", reason="leave"),
    ev(20000, "rebalance_started", "g1", 3, trigger="member_left", members=2),
    ev(20000, "member_left", "g1", 3, member="C", reason="leave"),
    ev(20100, "group_empty", "g1", 4),
]

SECOND_FILE = [
    ev(2000, "rebalance_started", "g2", 0, trigger="member_joined", members=0),
    ev(2010, "join_completed", "g2", 1, leader="X", protocol="cooperative-sticky", members=["X"]),
    ev(
        2020, "sync_completed", "g2", 1, assignments={"X": tps(("a", [0, 1]), ("b", [0]))}, sizes={}
    ),
    ev(2020, "group_stable", "g2", 1),
    json.dumps({"v": 3, "ts": 2500, "node": 1, "type": "group_stable", "group": "g2"}),
    ev(3000, "rebalance_started", "g2", 1, trigger="member_joined", members=1),
    ev(
        3100,
        "join_completed",
        "g2",
        2,
        leader="X",
        protocol="cooperative-sticky",
        members=["X", "Y"],
    ),
    ev(
        3200,
        "sync_completed",
        "g2",
        2,
        assignments={"X": tps(("a", [0, 1])), "Y": tps(("b", [0]))},
        sizes={},
    ),
    ev(3300, "group_stable", "g2", 2),
    json.dumps({"v": 1, "node": 1, "type": "group_stable", "group": "g2", "generation": 2}),
    ev(3400, "heartbeat", "g2", 2),
    ev(3500, "join_completed", "g2", 3, leader="X", protocol="cooperative-sticky", members=2),
    ev(4000, "rebalance_started", "g2", 2, trigger="metadata_changed", members=2),
    ev(
        4100,
        "join_completed",
        "g2",
        3,
        leader="X",
        protocol="cooperative-sticky",
        members=["X", "Y"],
    ),
    ev(100, "rebalance_started", "g3", 0, trigger="member_joined", members=0),
    ev(150, "join_completed", "g3", 1, leader="M", protocol="custom", members=["M"]),
    ev(160, "sync_completed", "g3", 1, assignments={"M": None}, sizes={"M": 7}),
    ev(170, "group_stable", "g3", 1),
]

EPISODE_COLUMNS = (
    "group", "episode", "generation", "outcome", "start_ts", "end_ts", "duration_ms", "trigger",
    "members_before", "members_after", "members_after_count", "leader", "protocol",
    "partitions_moved", "partitions_assigned", "stop_the_world_ms", "stop_the_world_max_ms",
    "stop_the_world_total_ms",
)  # fmt: skip

EXPECTED_EPISODES = [
    ("g1", 1, 1, "completed", 1000, 1150, 150, "member_joined", 0, ["A"], 1, "A", "range",
     4, 4, {"A": 150}, 150, 150),
    ("g1", 2, 2, "completed", 6000, 6450, 450, "member_joined", 1, ["A", "B"], 2, "A", "range",
     2, 4, {"A": 450, "B": 450}, 450, 900),
    ("g1", 3, None, "superseded", 9000, 9500, 500, "member_expired", 2, [], None, None, None,
     None, None, {}, None, 0),
    ("g1", 4, 3, "completed", 9500, 10000, 500, "member_joined", 2, ["A", "C"], 2, "A", "range",
     2, 4, {"A": 500, "C": 500}, 500, 1000),
    ("g1", 5, None, "empty", 20000, 20100, 100, "member_left", 2, [], 0, None, None,
     0, 0, {}, None, 0),  # released, handed to nobody: not moved
    ("g2", 1, 1, "completed", 2000, 2020, 20, "member_joined", 0, ["X"], 1, "X",
     "cooperative-sticky", 3, 3, {"X": 20}, 20, 20),
    ("g2", 2, 2, "completed", 3000, 3300, 300, "member_joined", 1, ["X", "Y"], 2, "X",
     "cooperative-sticky", 1, 3, {"X": 0, "Y": 300}, 300, 300),
    ("g2", 3, 3, "unfinished", 4000, None, None, "metadata_changed", 2, ["X", "Y"], 2, "X",
     "cooperative-sticky", None, None, {}, None, 0),
    ("g3", 1, 1, "completed", 100, 170, 70, "member_joined", 0, ["M"], 1, "M", "custom",
     None, None, {"M": 70}, 70, 70),
]  # fmt: skip


HOUR_MS = 3_600_000

EXPECTED_GROUPS: list[dict[str, Any]] = [
    {
        "group": "g1", "first_ts": 1000, "last_ts": 20100, "events": 23, "rebalances": 5,
        "completed": 3, "superseded": 1, "empty": 1, "unfinished": 0,
        "rebalances_per_hour": pytest.approx(5 * HOUR_MS / 19100),
        # durations 100, 150, 450, 500, 500 (linear interpolation between ranks)
        "duration_p50_ms": 450.0, "duration_p95_ms": 500.0, "duration_p99_ms": 500.0,
        "duration_max_ms": 500, "partitions_moved": 8, "stop_the_world_total_ms": 2050,
        "offset_commits": 1, "fenced_commits": 1, "expirations": 1,
        "top_triggers": [("member_joined", 3), ("member_expired", 1), ("member_left", 1)],
    },
    {
        "group": "g2", "first_ts": 2000, "last_ts": 4100, "events": 10, "rebalances": 3,
        "completed": 2, "superseded": 0, "empty": 0, "unfinished": 1,
        "rebalances_per_hour": pytest.approx(3 * HOUR_MS / 2100),
        # durations 20 and 300; the unfinished episode has none
        "duration_p50_ms": pytest.approx(160.0), "duration_p95_ms": pytest.approx(286.0),
        "duration_p99_ms": pytest.approx(297.2), "duration_max_ms": 300,
        "partitions_moved": 4, "stop_the_world_total_ms": 320,
        "offset_commits": 0, "fenced_commits": 0, "expirations": 0,
        "top_triggers": [("member_joined", 2), ("metadata_changed", 1)],
    },
    {
        "group": "g3", "first_ts": 100, "last_ts": 170, "events": 4, "rebalances": 1,
        "completed": 1, "superseded": 0, "empty": 0, "unfinished": 0,
        "rebalances_per_hour": pytest.approx(1 * HOUR_MS / 70),
        "duration_p50_ms": 70.0, "duration_p95_ms": 70.0, "duration_p99_ms": 70.0,
        "duration_max_ms": 70, "partitions_moved": None, "stop_the_world_total_ms": 70,
        "offset_commits": 0, "fenced_commits": 0, "expirations": 0,
        "top_triggers": [("member_joined", 1)],
    },
]  # fmt: skip

EXPECTED_QUARANTINE = [  # most frequent first, then by reason
    ("blank_line", 1, [""]),
    ("malformed_json", 1, ["this is not json"]),
    ("missing_field:member_ids", 1, [SECOND_FILE[11]]),
    ("missing_field:ts", 1, [SECOND_FILE[9]]),
    ("unknown_type", 1, [SECOND_FILE[10]]),
    ("unknown_version", 1, [SECOND_FILE[4]]),
]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("events")
    (directory / "events-0001.jsonl").write_text("\n".join(FIRST_FILE) + "\n")
    (directory / "events-0002.jsonl").write_text("\n".join(SECOND_FILE) + "\n")
    (directory / "notes.txt").write_text("not part of the log\n")
    return directory


@pytest.fixture(scope="module")
def loaded(spark: SparkSession, log_dir: Path) -> Iterator[LoadedLog]:
    log = load_events(spark, resolve_input(str(log_dir)))
    log.events.cache()
    yield log
    log.events.unpersist()


def test_episodes_match_the_hand_made_log(loaded: LoadedLog) -> None:
    rows = build_episodes(loaded.events).orderBy("group", "episode").collect()
    actual = [tuple(row[c] for c in EPISODE_COLUMNS) for row in rows]
    assert actual == EXPECTED_EPISODES


def test_group_metrics_match_the_hand_made_log(loaded: LoadedLog) -> None:
    activity = group_activity(loaded.checked)
    metrics = group_metrics(activity, build_episodes(loaded.events)).collect()
    actual = [row.asDict() for row in metrics]
    for row in actual:
        row["top_triggers"] = [(t["trigger"], t["count"]) for t in row["top_triggers"]]
    assert actual == EXPECTED_GROUPS


def test_every_bad_line_is_counted_with_its_reason(loaded: LoadedLog) -> None:
    total = len(FIRST_FILE) + len(SECOND_FILE)
    bad = sum(count for _, count, _ in EXPECTED_QUARANTINE)
    assert loaded.events.count() == total - bad
    assert loaded.quarantine.count() == bad
    summary = quarantine_summary(loaded.quarantine).collect()
    assert [(r["reason"], r["lines"], r["examples"]) for r in summary] == EXPECTED_QUARANTINE
