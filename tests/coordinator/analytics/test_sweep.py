"""The assignor sweep: scenario building, peers, racks, rounds, summary, plot and the CLI.

Spark tests share one tiny CLI run (4 scenarios, every default assignor and its peer) on the
session's local SparkSession; the rest runs the task code (and the plot) directly, without Spark.
"""

from __future__ import annotations

import io
import statistics
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import matplotlib.pyplot as plt
import pytest
from pyspark.sql import SparkSession

import assignors
import coordinator.analytics
from coordinator.analytics import kafka_python_peer as peer
from coordinator.analytics import session
from coordinator.analytics.cli import main
from coordinator.analytics.sweep import COLUMNS, ROW_SCHEMA, run_task
from coordinator.analytics.sweep_group import build_group, digest, rack_locality
from coordinator.analytics.sweep_plot import draw
from coordinator.analytics.sweep_summary import notes, summarize

GRID = ["--members", "4", "--topics", "3", "--partitions-per-topic", "4"]
GRID += ["--subscriptions", "equal,mixed", "--churn", "4", "--seed", "1"]
"""No `--racks`: the run uses the default, racks 0 and 3 (checked in the summary test)."""
EQUAL, MIXED = (4, 3, 4, "equal", 0, 1), (4, 3, 4, "mixed", 0, 1)
EQUAL_RACKS = (4, 3, 4, "equal", 3, 1)


class _KeepAlive:
    """The shared session, handed to the CLI, which would otherwise stop it when done."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark, name)

    def stop(self) -> None:
        pass


@dataclass(frozen=True)
class Run:
    status: int
    out: Path
    stdout: str
    stderr: str
    rows: list[dict[str, Any]]
    summary: list[dict[str, Any]]


@pytest.fixture(scope="module")
def run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    out = tmp_path_factory.mktemp("sweep")
    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(session, "build_session", lambda *a, **k: _KeepAlive(spark))
        with redirect_stdout(stdout), redirect_stderr(stderr):
            status = main(["sweep", "--out", str(out), "--quiet", *GRID])
    rows = [r.asDict() for r in spark.read.parquet(str(out / "sweep")).collect()]
    summary = [r.asDict() for r in spark.read.parquet(str(out / "sweep_summary")).collect()]
    yield Run(status, out, stdout.getvalue(), stderr.getvalue(), rows, summary)


def _chain(rows: list[dict[str, Any]], scenario: tuple[Any, ...], assignor: str) -> list[Any]:
    keys = ["members", "topics", "partitions_per_topic", "subscriptions", "racks", "seed"]
    chain = [r for r in rows if tuple(r[k] for k in keys) == scenario and r["assignor"] == assignor]
    return sorted(chain, key=lambda r: r["step"] if r["step"] is not None else -1)


# --- scenario building and metrics (no Spark) ---------------------------------------------


def test_racks_members_round_robin_replicas_on_distinct_racks() -> None:
    group = build_group((5, 2, 3, "equal", 3, 7))
    assert group.member_racks == {f"m0000{i}": f"r{i % 3}" for i in range(5)}
    assert len(group.replica_racks) == 6
    assert all(len(r) == 2 and r <= {"r0", "r1", "r2"} for r in group.replica_racks.values())
    group.add("n00001", ["t0"])
    assert group.member_racks["n00001"] == "r2"  # the sixth member created
    assert build_group((5, 2, 3, "equal", 0, 7)).member_racks == {}


def test_racks_do_not_change_the_subscriptions() -> None:
    with_racks, without = (
        build_group((6, 4, 2, "mixed", 3, 5)),
        build_group((6, 4, 2, "mixed", 0, 5)),
    )
    assert with_racks.subscriptions == without.subscriptions


def test_rack_locality_on_a_hand_made_assignment() -> None:
    racks = {"a": "r0", "b": "r1"}
    replicas = {
        ("t", 0): frozenset({"r0"}),
        ("t", 1): frozenset({"r1"}),
        ("t", 2): frozenset({"r0", "r1"}),
        ("t", 3): frozenset({"r1"}),
    }
    assignment = {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}
    assert rack_locality(assignment, racks, replicas) == 0.75  # only a's t-1 is remote
    assert rack_locality(assignment, {}, replicas) is None


def _rows(task: Any, churn: int = 4, cap: int = 1000) -> list[dict[str, Any]]:
    return [dict(zip(COLUMNS, r, strict=True)) for r in run_task(task, churn, cap)]


def test_slow_peers_over_the_partition_cap_are_skipped_with_a_reason() -> None:
    (skipped,) = _rows((EQUAL, "kafka-python", "sticky"), cap=11)  # 12 partitions
    assert skipped["status"] == "skipped"
    assert skipped["reason"] == "over --peer-max-partitions 11"
    assert skipped["step"] is None and skipped["compute_ms"] is None
    assert [r["status"] for r in _rows((EQUAL, "kafka-python", "range"), cap=11)] == ["ok"] * 5


def test_missing_kafka_python_skips_peer_rows_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "coordinator.analytics.kafka_python_peer", None)
    monkeypatch.delattr(coordinator.analytics, "kafka_python_peer", raising=False)
    (skipped,) = _rows((EQUAL, "kafka-python", "range"))
    assert skipped["status"] == "skipped"
    assert skipped["reason"].startswith("kafka-python not importable on the executor")
    assert [r["status"] for r in _rows((EQUAL, "rebalance", "range"))] == ["ok"] * 5


def test_cooperative_steps_run_two_rounds_and_move_the_minimum() -> None:
    for implementation in ("rebalance", "kafka-python"):
        rows = _rows((EQUAL, implementation, "cooperative-sticky"))
        assert all(r["valid"] and r["moved"] == r["min_moves"] for r in rows)
        joins = [r for r in rows if r["event"] == "join"]
        assert joins and all(r["rounds"] == 2 and r["withheld"] == r["min_moves"] for r in joins)
        assert all(r["rounds"] == 1 for r in rows if r["event"] != "join")


def test_kafka_python_roundrobin_error_on_mixed_subscriptions_is_a_row() -> None:
    (error,) = _rows((MIXED, "kafka-python", "roundrobin"))
    assert (error["status"], error["valid"], error["step"]) == ("error", False, 0)
    assert error["reason"].startswith("KeyError")


# --- the CLI run on Spark -------------------------------------------------------------------


def _kafka_python_fresh(algorithm: str, scenario: tuple[Any, ...]) -> str:
    """kafka-python's own output for the fresh step, built without our peer plumbing."""
    group = build_group(scenario)
    assignor = peer.ALGORITHMS[algorithm]()
    members = [
        SimpleNamespace(member_id=m, group_instance_id=None, metadata=assignor.metadata(topics))
        for m, topics in group.subscriptions.items()
    ]
    return digest(peer.flatten(assignor.assign(peer.FakeCluster(group.partitions), members)))


@pytest.mark.spark
def test_peer_rows_are_kafka_pythons_output_and_equal_ours_for_range_roundrobin(
    run: Run,
) -> None:
    assert run.status == 0
    for algorithm in ("range", "roundrobin", "sticky"):
        theirs = _chain(run.rows, EQUAL, f"kafka-python:{algorithm}")
        assert [r["implementation"] for r in theirs] == ["kafka-python"] * 5
        assert theirs[0]["digest"] == _kafka_python_fresh(algorithm, EQUAL)
    for algorithm in ("range", "roundrobin"):  # equal subscriptions: the project claims equality
        ours, theirs = (
            _chain(run.rows, EQUAL, algorithm),
            _chain(run.rows, EQUAL, f"kafka-python:{algorithm}"),
        )
        fields = ["step", "digest", "balance", "moved", "min_moves", "valid"]
        assert [[r[f] for f in fields] for r in ours] == [[r[f] for f in fields] for r in theirs]
    assert not [r for r in run.rows if r["assignor"] == "kafka-python:uniform"]


@pytest.mark.spark
def test_racks_are_used_and_locality_is_measured(run: Run) -> None:
    for algorithm in ("range", "sticky"):
        with_racks = _chain(run.rows, EQUAL_RACKS, algorithm)
        without = _chain(run.rows, EQUAL, algorithm)
        assert [r["digest"] for r in with_racks] != [r["digest"] for r in without]
        assert all(r["rack_local"] is None for r in without)
        ours = statistics.mean(r["rack_local"] for r in with_racks)
        blind = statistics.mean(
            r["rack_local"] for r in _chain(run.rows, EQUAL_RACKS, f"kafka-python:{algorithm}")
        )
        assert ours > blind  # kafka-python has no KIP-881: rack-blind placement
    # the row's locality is that of the rack-aware assignment: recompute the fresh one
    group = build_group(EQUAL_RACKS)
    fresh = assignors.assign(
        "range", group.subscriptions, group.partitions,
        member_racks=group.member_racks, partition_racks=group.replica_racks,
    )  # fmt: skip
    row = _chain(run.rows, EQUAL_RACKS, "range")[0]
    assert row["digest"] == digest(fresh)
    assert row["rack_local"] == rack_locality(fresh, group.member_racks, group.replica_racks)


def _expected(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of one assignor's rows, computed here in plain Python."""
    ok = [r for r in rows if r["status"] == "ok"]
    bounded = [r for r in ok if r["step"] > 0 and r["min_moves"] is not None]
    times = sorted(r["compute_ms"] for r in ok)
    return {
        "steps": len(ok),
        "errors": sum(r["status"] == "error" for r in rows),
        "all_valid": all(r["valid"] for r in rows if r["valid"] is not None),
        "balance_max": max(r["balance"] for r in ok),
        "moved_total": sum(r["moved"] for r in ok),
        "min_moves_total": sum(r["min_moves"] for r in bounded) if bounded else None,
        "excess_moves": sum(r["moved"] - r["min_moves"] for r in bounded) if bounded else None,
        "compute_p50_ms": statistics.median(times),
    }


SUMMARY_KEY = ("assignor", "subscriptions", "racks")


@pytest.mark.spark
def test_summary_matches_the_rows_one_row_per_rack_count(run: Run) -> None:
    assert {r["racks"] for r in run.rows} == {0, 3}  # the default --racks
    keys = [tuple(s[k] for k in SUMMARY_KEY) for s in run.summary]
    assert len(keys) == len(set(keys))
    assert set(keys) == {tuple(r[k] for k in SUMMARY_KEY) for r in run.rows}
    for s in run.summary:
        rows = [r for r in run.rows if all(r[k] == s[k] for k in SUMMARY_KEY)]
        assert s["scenarios"] == (s["steps"] > 0)  # one scenario per kind and rack count
        if s["assignor"] == "kafka-python:roundrobin" and s["subscriptions"] == "mixed":
            assert (s["steps"], s["errors"], s["all_valid"]) == (0, 1, False)
            continue
        expected = _expected(rows)
        assert {k: s[k] for k in expected} == pytest.approx(expected)
        assert (s["rack_local_mean"] is None) == (s["racks"] == 0)
        ratio = _peer_ratio(run.rows, s) if s["implementation"] == "rebalance" else None
        assert s["compute_ratio_vs_peer"] == pytest.approx(ratio)


def _peer_ratio(rows: list[dict[str, Any]], summary: dict[str, Any]) -> float | None:
    """Median of ours / kafka-python's compute time over the steps both measured."""
    keys = ["members", "topics", "partitions_per_topic", "subscriptions", "racks", "seed", "step"]

    def timed(assignor: str) -> dict[tuple[Any, ...], float]:
        return {
            tuple(r[k] for k in keys): r["compute_ms"]
            for r in rows
            if r["assignor"] == assignor
            and r["subscriptions"] == summary["subscriptions"]
            and r["racks"] == summary["racks"]
            and r["status"] == "ok"
        }

    ours, theirs = timed(summary["assignor"]), timed(f"kafka-python:{summary['assignor']}")
    ratios = [ours[k] / theirs[k] for k in ours.keys() & theirs.keys()]
    return statistics.median(ratios) if ratios else None


@pytest.mark.spark
def test_summary_numbers_exact_on_hand_made_rows_racks_not_pooled(spark: SparkSession) -> None:
    def row(implementation: str, seed: int, step: int, ms: float, **extra: Any) -> dict[str, Any]:
        prefix = "" if implementation == "rebalance" else "kafka-python:"
        base: dict[str, Any] = dict.fromkeys(COLUMNS)
        base.update(
            zip(
                ["members", "topics", "partitions_per_topic", "subscriptions"],
                [2, 1, 4, "equal"],
                strict=True,
            )
        )
        base.update(racks=0, seed=seed, assignor=f"{prefix}sticky", implementation=implementation)
        base.update(algorithm="sticky", step=step, status="ok", valid=True, compute_ms=ms)
        base.update(balance=step % 2, moved=[0, 3, 4][step], min_moves=[0, 3, 3][step])
        return base | extra

    # no racks: two scenarios of ours, one paired with the peer
    rows = [row("rebalance", 1, s, ms) for s, ms in enumerate([1.0, 2.0, 3.0])]
    rows += [row("kafka-python", 1, s, ms) for s, ms in enumerate([10.0, 20.0, 60.0])]
    rows += [row("rebalance", 2, 0, 4.0)]
    # 3 racks, same seed: ours moves more (for locality) and is relatively slower
    racked = [(4.0, 0, 0.5), (6.0, 4, 0.75), (8.0, 5, 1.0)]
    rows += [
        row("rebalance", 1, s, ms, racks=3, moved=moved, rack_local=local)
        for s, (ms, moved, local) in enumerate(racked)
    ]
    rows += [
        row("kafka-python", 1, s, ms, racks=3, rack_local=0.25)
        for s, ms in enumerate([8.0, 12.0, 16.0])
    ]
    skip = {"status": "skipped", "reason": "over --peer-max-partitions 1", "step": None}
    rows += [row("kafka-python", 2, 0, 0.0, racks=3, valid=None, compute_ms=None) | skip]
    frame = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], ROW_SCHEMA)
    summary = [r.asDict() for r in summarize(frame).collect()]
    assert [(s["implementation"], s["racks"]) for s in summary] == [
        ("rebalance", 0), ("rebalance", 3), ("kafka-python", 0), ("kafka-python", 3),
    ]  # fmt: skip
    ours, ours_racks, theirs, theirs_racks = summary
    assert ours == {
        "implementation": "rebalance", "algorithm": "sticky", "assignor": "sticky",
        "subscriptions": "equal", "racks": 0, "scenarios": 2, "steps": 4, "errors": 0,
        "skipped": 0, "all_valid": True, "balance_mean": 0.25, "balance_max": 1,
        "moved_total": 7, "min_moves_total": 6, "excess_moves": 1, "compute_p50_ms": 2.5,
        "compute_p95_ms": pytest.approx(3.85), "rack_local_mean": None,
        "compute_ratio_vs_peer": 0.1, "paired_steps": 3,  # median of 0.1, 0.1, 0.05
    }  # fmt: skip
    # pooled with the rows above, excess would be 4 and the ratio the median of all six (0.3)
    assert ours_racks == {
        "implementation": "rebalance", "algorithm": "sticky", "assignor": "sticky",
        "subscriptions": "equal", "racks": 3, "scenarios": 1, "steps": 3, "errors": 0,
        "skipped": 0, "all_valid": True, "balance_mean": pytest.approx(1 / 3), "balance_max": 1,
        "moved_total": 9, "min_moves_total": 6, "excess_moves": 3, "compute_p50_ms": 6.0,
        "compute_p95_ms": pytest.approx(7.8), "rack_local_mean": 0.75,
        "compute_ratio_vs_peer": 0.5, "paired_steps": 3,
    }  # fmt: skip
    fields = ["assignor", "scenarios", "steps", "skipped", "compute_ratio_vs_peer"]
    assert [theirs[f] for f in fields] == ["kafka-python:sticky", 1, 3, 0, None]
    assert [theirs_racks[f] for f in fields] == ["kafka-python:sticky", 1, 3, 1, None]
    assert (theirs["rack_local_mean"], theirs_racks["rack_local_mean"]) == (None, 0.25)
    assert notes(frame) == [
        "kafka-python:sticky: skipped in 1 scenario(s): over --peer-max-partitions 1"
    ]


def _plotted(ax: Any) -> list[float]:
    return sorted(bar.get_height() for bars in ax.containers for bar in bars)


def test_plot_keeps_rack_and_no_rack_rows_apart() -> None:
    summary = [
        {
            "assignor": f"{prefix}sticky", "implementation": implementation,
            "subscriptions": kind, "racks": racks,
            "balance_mean": base + shift + 1 + 10 * racks,
            "rack_local_mean": (base + shift + 1) / 10 if racks else None,
            "excess_moves": base + 100 * racks if kind == "equal" else None,
        }
        for prefix, implementation, base in (("", "rebalance", 0), ("kafka-python:", "peer", 5))
        for kind, shift in (("equal", 0), ("mixed", 2))
        for racks in (0, 3)
    ]  # fmt: skip
    fig = draw(summary, [])
    try:
        balance, moves, _, locality = fig.axes
        assert "no racks" in balance.get_title()
        assert _plotted(balance) == [1, 3, 6, 8]  # the no-rack rows only
        assert _plotted(moves) == [0, 5, 300, 305]  # one bar per rack count, never a sum
        assert [t.get_text() for t in moves.get_legend().get_texts()] == [
            "equal, no racks", "equal, 3 racks", "kafka-python",
        ]  # fmt: skip
        assert "3 racks" in locality.get_title()
        assert _plotted(locality) == pytest.approx([0.1, 0.3, 0.6, 0.8])
    finally:
        plt.close(fig)


@pytest.mark.spark
def test_cli_prints_the_table_notes_and_paths_and_draws_the_plot(run: Run) -> None:
    header, *lines = run.stdout.splitlines()
    assert header.split()[:4] == ["assignor", "subs", "racks", "scen"]
    # by algorithm, ours before the peer, then subscriptions, then racks
    assert [line.split()[:3] for line in lines if "sticky" in line.split()[0]] == [
        [name, kind, racks]
        for algorithm in ("cooperative-sticky", "sticky")
        for name in (algorithm, f"kafka-python:{algorithm}")
        for kind in ("equal", "mixed")
        for racks in ("0", "3")
    ]
    assert "4 scenarios" in lines[-1] and str(run.out / "sweep_summary") in lines[-1]
    assert "note: kafka-python:roundrobin: raised an error in 2 scenario(s): KeyError" in run.stderr
    png = (run.out / "sweep.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000


# --- usage errors (before Spark starts) -----------------------------------------------------


def _no_spark(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("Spark started")


def test_unknown_assignor_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(session, "build_session", _no_spark)
    assert main(["sweep", "--out", str(tmp_path), "--assignors", "range,rnage"]) == 2
    assert "unknown assignor 'rnage'" in capsys.readouterr().err


def test_bad_conf_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(session, "build_session", _no_spark)
    assert main(["sweep", "--out", str(tmp_path), "--conf", "memory=1g"]) == 2
    assert "bad --conf 'memory=1g'" in capsys.readouterr().err


def test_bad_grid_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "--out", "x", "--members", "10,ten"])
    assert exit_info.value.code == 2
    assert "not a list of integers" in capsys.readouterr().err


def test_unwritable_out_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "build_session", _no_spark)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["sweep", "--out", str(blocker / "sub")]) == 2
