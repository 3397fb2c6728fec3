"""The report command: clear errors on bad input before Spark starts, and a full run's outputs."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from coordinator.analytics.cli import add_report_arguments, run_report
from coordinator.analytics.pipeline import TABLES, run_pipeline
from coordinator.analytics.session import local_shuffle_partitions, parse_conf


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_report_arguments(parser)
    return parser.parse_args(list(argv))


def _log(tmp_path: Path) -> Path:
    path = tmp_path / "events.jsonl"
    common = {"v": 1, "node": 0, "group": "g", "member": None}
    started = common | {"ts": 10, "type": "rebalance_started", "generation": 0}
    started |= {"trigger": "member_joined", "members": 0}
    stable = common | {"ts": 25, "type": "group_stable", "generation": 1}
    path.write_text(f"{json.dumps(started)}\n{{broken\n{json.dumps(stable)}\n")
    return path


def test_missing_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_report(_args(str(tmp_path / "absent"), "--out", str(tmp_path / "o"))) == 2
    assert "does not exist" in capsys.readouterr().err


def test_bad_master_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _args(str(_log(tmp_path)), "--out", str(tmp_path / "o"), "--master", "nowhere")
    assert run_report(args) == 2
    assert "bad Spark master URL 'nowhere'" in capsys.readouterr().err


@pytest.mark.parametrize("setting", ["executor.memory=1g", "spark.executor.memory", "spark.=1"])
def test_bad_conf_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str
) -> None:
    args = _args(str(_log(tmp_path)), "--out", str(tmp_path / "o"), "--conf", setting)
    assert run_report(args) == 2
    assert f"bad --conf {setting!r}: expected spark.KEY=VALUE" in capsys.readouterr().err


def test_conf_settings_are_parsed_the_later_one_winning() -> None:
    settings = ["spark.a=1", "spark.b.c = x=y", "spark.a=2", "spark.empty="]
    assert parse_conf(settings) == {"spark.a": "2", "spark.b.c": " x=y", "spark.empty": ""}


def test_a_local_master_shuffles_four_partitions_per_core_and_a_cluster_keeps_sparks() -> None:
    cores = os.cpu_count() or 1
    assert local_shuffle_partitions("local") == 4
    assert local_shuffle_partitions("local[3]") == 12
    assert local_shuffle_partitions("local[2, 4]") == 8  # local[N, retries]
    assert local_shuffle_partitions("local[*]") == 4 * cores
    for master in ("local-cluster[2, 1, 1024]", "spark://h:7077", "yarn", "k8s://https://h"):
        assert local_shuffle_partitions(master) is None


def test_unwritable_out_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert run_report(_args(str(_log(tmp_path)), "--out", str(blocker / "o"))) == 2
    assert "cannot create output directory" in capsys.readouterr().err


def test_empty_input_directory_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()
    assert run_report(_args(str(tmp_path / "logs"), "--out", str(tmp_path / "o"))) == 2
    assert "holds no *.jsonl or *.parquet files" in capsys.readouterr().err


@pytest.mark.spark
def test_pipeline_writes_every_table_and_the_report(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "out"
    counts = run_pipeline(spark, str(_log(tmp_path)), str(out), out, show_progress=False)
    assert (counts.lines, counts.events, counts.quarantined) == (3, 2, 1)
    assert all((out / table).is_dir() for table in TABLES)
    episode = spark.read.parquet(str(out / "episodes")).collect()
    assert [(e["outcome"], e["duration_ms"]) for e in episode] == [("completed", 15)]
    assert [r["line"] for r in spark.read.parquet(str(out / "quarantine")).collect()] == ["{broken"]
    page = (out / "index.html").read_text()
    assert "3 input lines: 2 valid events" in page
    assert "{broken" in page
    for png in ("timeline.png", "durations.png", "partitions_moved.png"):
        assert (out / png).read_bytes().startswith(b"\x89PNG")


STOP_SCRIPT = """
import os
from coordinator.analytics.session import build_session, stop_session
spark = build_session("local[1]")
spark.range(3).count()
pid = spark.sparkContext._gateway.proc.pid
stop_session(spark)
print("jvm alive after stop:", os.path.exists(f"/proc/{pid}"), flush=True)
"""


@pytest.mark.spark
def test_stop_session_ends_the_jvm_it_started() -> None:
    # In a process of its own (the suite's shared session must keep its JVM), and checked there,
    # before that process exits: PySpark alone keeps the JVM until then.
    done = subprocess.run(
        [sys.executable, "-c", STOP_SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "jvm alive after stop: False"


@pytest.mark.spark
# Its own JVM, not the shared session: beside the Spark worker, not after it (the critical path).
@pytest.mark.xdist_group("spark_processes")
def test_report_quiet_prints_nothing_on_success(tmp_path: Path) -> None:
    """`rebalance report --quiet` as a user runs it: its own process, launching Spark's JVM, whose
    banner, log4j lines and module warning are not printed; the report is written all the same."""
    program = Path(sys.executable).with_name("rebalance")
    done = subprocess.run(
        [str(program), "report", str(_log(tmp_path)), "--out", str(tmp_path / "out"),
         "--master", "local[1]", "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert (tmp_path / "out" / "index.html").is_file()
