"""ZooKeeper-coordinated groups in `rebalance report`: their events are valid (nothing is
quarantined), each consumer's run goes from its release to its claims, and overlapping runs
make one episode of the group, next to the classic groups' episodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.pipeline import run_pipeline

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000


def zk(ts: int, kind: str, member: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "ts": T0 + ts, "node": -1, "type": kind, "group": "zg", "generation": None,
            "member": member, "group_type": "zookeeper", **fields}  # fmt: skip


def completed(ts: int, member: str, partitions: list[int], consumers: list[str],
              attempt: int = 1, zk_ops: int = 20) -> dict[str, Any]:  # fmt: skip
    return zk(ts, "zk_rebalance_completed", member, attempt=attempt,
              assignments={member: [["t", partitions]]}, consumers=consumers,
              partitions_total=4, strategy="range", zk_ops=zk_ops)  # fmt: skip


LOG = [
    # a alone: episode 1
    zk(0, "member_joined", "a", client_id="zg", instance_id=None, protocols=["range"]),
    zk(1, "rebalance_started", "a", trigger="started", members=0, watch_events=0),
    completed(11, "a", [0, 1, 2, 3], ["a"]),
    # b joins: b's first claims fail once (a still holds 2, 3), both runs overlap: episode 2
    zk(100, "rebalance_started", "b", trigger="started", members=0, watch_events=0),
    zk(102, "rebalance_started", "a", trigger="consumers_changed", members=1, watch_events=2),
    zk(105, "zk_claims_failed", "b", attempt=1, conflicts=[["t", 2], ["t", 3]], rolled_back=0),
    zk(105, "zk_rebalance_retry", "b", attempt=1, backoff_ms=200, reason="claims_failed"),
    completed(120, "a", [0, 1], ["a", "b"]),
    completed(310, "b", [2, 3], ["a", "b"], attempt=2, zk_ops=30),
    zk(400, "offset_commit", "a", partitions=2),
    # b leaves cleanly; a rebalances alone: episode 3
    zk(500, "member_left", "b", reason="leave"),
    zk(505, "rebalance_started", "a", trigger="consumers_changed", members=2, watch_events=1),
    completed(525, "a", [0, 1, 2, 3], ["a"]),
]
CLASSIC = [
    {"v": 1, "ts": T0, "node": 1, "type": "rebalance_started", "group": "cg", "generation": 0,
     "member": None, "trigger": "member_joined", "members": 0},
    {"v": 1, "ts": T0 + 5, "node": 1, "type": "join_completed", "group": "cg", "generation": 1,
     "member": None, "leader": "m", "protocol": "range", "members": ["m"]},
    {"v": 1, "ts": T0 + 6, "node": 1, "type": "sync_completed", "group": "cg", "generation": 1,
     "member": None, "assignments": {"m": [["t", [0]]]}, "sizes": {"m": 10}},
    {"v": 1, "ts": T0 + 6, "node": 1, "type": "group_stable", "group": "cg", "generation": 1,
     "member": None},
]  # fmt: skip


def test_zookeeper_events_make_episodes_and_nothing_is_quarantined(
    spark: SparkSession, tmp_path: Path
) -> None:
    log = tmp_path / "events"
    log.mkdir()
    (log / "zookeeper-zg.jsonl").write_text("".join(json.dumps(e) + "\n" for e in LOG))
    (log / "events-000001.jsonl").write_text("".join(json.dumps(e) + "\n" for e in CLASSIC))
    out = tmp_path / "out"
    counts = run_pipeline(spark, str(log), str(out), tmp_path / "report", show_progress=False)
    assert (counts.events, counts.quarantined) == (len(LOG) + len(CLASSIC), 0)

    episodes = {
        (r["group"], r["episode"]): r for r in spark.read.parquet(str(out / "episodes")).collect()
    }
    assert set(episodes) == {("cg", 1), ("zg", 1), ("zg", 2), ("zg", 3)}
    assert episodes[("cg", 1)]["outcome"] == "completed"  # the classic group is unchanged
    two = episodes[("zg", 2)]
    assert (two["start_ts"] - T0, two["end_ts"] - T0, two["duration_ms"]) == (100, 310, 210)
    assert two["outcome"] == "completed" and two["trigger"] == "started"
    assert sorted(two["members_after"]) == ["a", "b"] and two["protocol"] == "range"
    assert two["partitions_moved"] == 2 and two["partitions_assigned"] == 4
    assert two["stop_the_world_ms"] == {"a": 18, "b": 210}
    three = episodes[("zg", 3)]
    assert three["partitions_moved"] == 2 and three["members_before"] == 2

    table = {r["episode"]: r for r in spark.read.parquet(str(out / "zookeeper")).collect()}
    assert (table[2]["runs"], table[2]["consumers"], table[2]["attempts"]) == (2, 2, 3)
    assert (table[2]["failed_claim_rounds"], table[2]["retries"]) == (1, 1)
    assert table[2]["zk_ops"] == 50 and table[2]["watch_events"] == 2
    assert table[2]["time_without_partitions_ms"] == 228

    groups = {r["group"]: r for r in spark.read.parquet(str(out / "groups")).collect()}
    assert groups["zg"]["rebalances"] == 3 and groups["zg"]["offset_commits"] == 1
    page = (tmp_path / "report" / "index.html").read_text()
    assert "ZooKeeper-coordinated groups" in page
    assert (tmp_path / "report" / "zookeeper_runs.png").stat().st_size > 0

    # ownership from the consumers' runs: released at their next run, at a clean leave
    ownership = spark.read.parquet(str(out / "ownership")).where("group = 'zg'")
    got = sorted(
        (r["member"], [p["partition"] for p in r["partitions"]], r["start_ts"] - T0,
         None if r["end_ts"] is None else r["end_ts"] - T0, r["ended_by"])
        for r in ownership.collect()
    )  # fmt: skip
    assert got == [
        ("a", [0, 1], 120, 505, "consumers_changed"),
        ("a", [0, 1, 2, 3], 11, 102, "consumers_changed"),
        ("a", [0, 1, 2, 3], 525, None, None),
        ("b", [2, 3], 310, 500, "member_left"),
    ]

    # two group types in the log: side by side, keyed on group_type
    protocols = {r["group_type"]: r for r in spark.read.parquet(str(out / "protocols")).collect()}
    assert set(protocols) == {"classic", "zookeeper"}
    zk_type, classic = protocols["zookeeper"], protocols["classic"]
    assert (zk_type["groups"], zk_type["churn_events"], zk_type["rebalances"]) == (1, 2, 3)
    assert (zk_type["duration_p50_ms"], zk_type["duration_p99_ms"]) == (20, pytest.approx(206.2))
    assert zk_type["partitions_moved"] == 8  # 4 first claimed, then 2 and 2
    assert zk_type["member_seconds_without_partitions"] == pytest.approx(0.258)
    assert zk_type["partitions_moved_per_churn_event"] == 4
    assert (classic["rebalances"], classic["partitions_moved"], classic["churn_events"]) == (
        1,
        1,
        0,
    )
    assert classic["rebalances_per_churn_event"] is None  # no churn logged: nothing to divide by
    assert '<section id="protocols">' in page
    assert (tmp_path / "report" / "protocols.png").read_bytes().startswith(b"\x89PNG")


def test_a_consumer_that_gives_up_fails_its_episode(spark: SparkSession, tmp_path: Path) -> None:
    log = tmp_path / "zk.jsonl"
    events = [
        zk(0, "rebalance_started", "a", trigger="started", members=0, watch_events=0),
        *(zk(10 * k, "zk_claims_failed", "a", attempt=k, conflicts=[["t", 0]], rolled_back=0)
          for k in (1, 2)),
        zk(15, "zk_rebalance_retry", "a", attempt=1, backoff_ms=5, reason="claims_failed"),
        zk(30, "zk_rebalance_failed", "a", attempt=2, zk_ops=11),
    ]  # fmt: skip
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = tmp_path / "out"
    counts = run_pipeline(spark, str(log), str(out), None, show_progress=False)
    assert counts.quarantined == 0
    (episode,) = spark.read.parquet(str(out / "episodes")).collect()
    assert episode["outcome"] == "failed" and episode["duration_ms"] == 30
    (row,) = spark.read.parquet(str(out / "zookeeper")).collect()
    assert (row["rebalance_failures"], row["failed_claim_rounds"], row["zk_ops"]) == (1, 2, 11)
