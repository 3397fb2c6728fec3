"""The ownership table on a real `rebalance demo` run's log (`demo_log/`: its event log and what
it printed): exactly the ownership the demo printed at each step, and the crashed member's
partitions owned by nobody from her last heartbeat until the group settled again. (Equality
with the plain-Python reference is checked in `test_against_reference.py`.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from reference_comparison import as_json_assignment
from reference_ownership import ownership as reference_ownership

from coordinator.analytics.pipeline import run_pipeline
from coordinator.analytics.zookeeper_ownership import zookeeper_ownership

pytestmark = pytest.mark.spark

DEMO_LOG = Path(__file__).parent / "demo_log"


STEP = re.compile(r"^(?P<what>.+): generation (?P<generation>\d+), stable after")
OWNER = re.compile(r"^\s+(?P<name>\w+)\s+\[(?P<partitions>[\d, ]*)\]$")


def demo_steps(text: str) -> list[tuple[int, dict[str, list[int]]]]:
    """(generation, client id -> partitions) of every step the demo printed."""
    steps: list[tuple[int, dict[str, list[int]]]] = []
    for line in text.splitlines():
        if step := STEP.match(line.strip("\n")):
            steps.append((int(step["generation"]), {}))
        elif (owner := OWNER.match(line)) and steps:
            numbers = owner["partitions"].split(",") if owner["partitions"] else []
            steps[-1][1][owner["name"]] = [int(p) for p in numbers]
    return steps


def test_the_demo_report_shows_what_the_demo_printed(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_pipeline(spark, str(DEMO_LOG), str(out), None, show_progress=False)
    episodes = {r["generation"]: r for r in spark.read.parquet(str(out / "episodes")).collect()}
    rows = spark.read.parquet(str(out / "ownership")).collect()
    steps = demo_steps((DEMO_LOG / "steps.txt").read_text())
    assert [generation for generation, _ in steps] == [1, 2, 3, 4]
    for generation, printed in steps:
        settled = episodes[generation]["end_ts"]  # the assignment is handed out
        owned = {
            r["client_id"]: [p["partition"] for p in r["partitions"]]
            for r in rows
            if r["start_ts"] == settled and not r["kept"]
        }
        assert owned == printed, generation

    # carol is SIGKILLed after generation 3 settles: she owns nothing from her last heartbeat,
    # one session timeout (6 s) before her expiry, and her partitions nobody until generation 4
    (carol,) = [r for r in rows if r["client_id"] == "carol" and r["end_ts"] is not None
                and r["ended_by"] == "last_heartbeat"]  # fmt: skip
    expiry = episodes[4]["start_ts"]
    assert carol["end_ts"] == expiry - 6000
    assert carol["start_ts"] == episodes[3]["end_ts"]
    her_partitions = {p["partition"] for p in carol["partitions"]}
    for partition in her_partitions:
        owners = [r for r in rows if partition in {p["partition"] for p in r["partitions"]}]
        next_owner = min((r for r in owners if r["start_ts"] > carol["start_ts"]),
                         key=lambda r: r["start_ts"])  # fmt: skip
        assert next_owner["start_ts"] == episodes[4]["end_ts"]
        assert next_owner["start_ts"] - carol["end_ts"] >= 6000


def _ev(ts: int, kind: str, generation: int, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "ts": ts, "node": 1, "type": kind, "group": "co", "generation": generation,
            "member": None, **fields}  # fmt: skip


def _episode(ts: int, generation: int, trigger: str, protocol: str,
             assignments: dict[str, list[int]]) -> list[dict[str, Any]]:  # fmt: skip
    return [
        _ev(ts, "rebalance_started", generation, trigger=trigger, members=len(assignments)),
        _ev(ts + 10, "join_completed", generation + 1, leader="a", protocol=protocol,
            members=sorted(assignments)),
        _ev(ts + 20, "sync_completed", generation + 1,
            assignments={m: [["t", ps]] for m, ps in assignments.items()}),
        _ev(ts + 20, "group_stable", generation + 1),
    ]  # fmt: skip


def test_cooperative_members_keep_what_does_not_move(spark: SparkSession, tmp_path: Path) -> None:
    log = [
        *_episode(0, 0, "member_joined", "cooperative-sticky", {"a": [0, 1, 2, 3]}),
        # b joins: a keeps 0 and 1 through the rebalance, gives up 2 and 3 at its start
        *_episode(100, 1, "member_joined", "cooperative-sticky", {"a": [0, 1], "b": []}),
        *_episode(200, 2, "member_rejoined", "cooperative-sticky", {"a": [0, 1], "b": [2, 3]}),
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in log))
    out = tmp_path / "out"
    run_pipeline(spark, str(tmp_path / "events.jsonl"), str(out), None, show_progress=False)
    rows = spark.read.parquet(str(out / "ownership")).orderBy("member", "start_ts", "kept")
    got = [
        (r["member"], [p["partition"] for p in r["partitions"]], r["start_ts"], r["end_ts"],
         r["ended_by"], r["kept"])
        for r in rows.collect()
    ]  # fmt: skip
    assert got == [
        ("a", [0, 1, 2, 3], 20, 100, "member_joined", False),
        ("a", [0, 1], 100, 120, "assignment", True),
        ("a", [0, 1], 120, 200, "member_rejoined", False),
        ("a", [0, 1], 200, 220, "assignment", True),
        ("a", [0, 1], 220, None, None, False),
        ("b", [2, 3], 220, None, None, False),
    ]
    episodes = [r.asDict() for r in spark.read.parquet(str(out / "episodes")).collect()]
    for row in episodes:
        row["assignment"] = as_json_assignment(row["assignment"])
    expected = reference_ownership(log, sorted(episodes, key=lambda e: e["episode"]))
    assert [(r["member"], [p for _, p in r["partitions"]], r["start_ts"], r["end_ts"],
             r["ended_by"], r["kept"]) for r in expected] == got  # fmt: skip


RUNS_SCHEMA = (
    "group string, member string, run int, start_ts long, end_ts long, outcome string, "
    "trigger string, held_after array<struct<topic:string,partitions:array<int>>>"
)
NOTES_SCHEMA = "group string, member string, client_id string, last_heard_ts long, left_ts long"


def test_a_dead_zookeeper_consumer_owns_until_another_claims(spark: SparkSession) -> None:
    runs = spark.createDataFrame(
        [
            ("zg", "x", 1, 0, 20, "completed", "started", [("t", [0, 1])]),
            ("zg", "y", 1, 100, 150, "completed", "started", [("t", [2, 3])]),
            # y is SIGKILLed: no run, no leave; its session expires, x's watch fires at 9000
            ("zg", "x", 2, 9000, 9150, "completed", "consumers_changed", [("t", [0, 1, 2, 3])]),
        ],
        RUNS_SCHEMA,
    )
    notes = spark.createDataFrame([("zg", "y", "billing", None, None)], NOTES_SCHEMA)
    rows = zookeeper_ownership(runs, notes).orderBy("member", "start_ts").collect()
    got = [(r["member"], r["client_id"], [p["partition"] for p in r["partitions"]], r["start_ts"],
            r["end_ts"], r["ended_by"]) for r in rows]  # fmt: skip
    assert got == [
        ("x", None, [0, 1], 20, 9000, "consumers_changed"),
        ("x", None, [0, 1, 2, 3], 9150, None, None),
        ("y", "billing", [2, 3], 150, 9000, "taken_over"),
    ]
