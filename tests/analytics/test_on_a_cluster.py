"""Both Spark commands on a cluster: nothing in them may assume one machine.

`local-cluster[2,1,768]` is Spark's own test cluster: a master and two workers, each executor its
own JVM with its own Python workers, talking to the driver over the network as on any standalone
cluster. The commands run as a user would start them (a separate process, `--master`, `--conf`),
and their outputs must equal what the plain-Python reference (report) and the task code run here
(sweep) say. Spark's own event log proves the tasks ran on the executors, not in the driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from messy_log import messy_log, write_rotated
from pyspark.sql import SparkSession
from reference_comparison import assert_episodes_match, assert_metrics_match

from coordinator.analytics.sweep import (
    COLUMNS,
    DEFAULT_ASSIGNORS,
    KAFKA_PYTHON,
    OURS,
    PEER_MAX_PARTITIONS,
    plan,
    run_task,
)

pytestmark = pytest.mark.spark

CLUSTER = "local-cluster[2,1,768]"
"""Two workers of one core and 768 MB each: small enough for a 2-core CI machine."""


def _start_on_cluster(
    command: str, spark_events: Path, *argv: str, executor_python: str = sys.executable
) -> subprocess.Popen[str]:
    """Start `python -m coordinator.analytics COMMAND` on a cluster of its own."""
    spark_events.mkdir()
    conf = {
        "spark.executor.memory": "512m",
        "spark.sql.shuffle.partitions": "4",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": spark_events.as_uri(),
        "spark.eventLog.rolling.enabled": "false",  # one file, not a directory of parts
        "spark.eventLog.compress": "false",  # JSON lines we can read
    }
    settings = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
    return subprocess.Popen(
        [sys.executable, "-m", "coordinator.analytics", command, "--master", CLUSTER,
         *settings, "--quiet", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"PYSPARK_PYTHON": executor_python},
    )  # fmt: skip


def _finished(process: subprocess.Popen[str]) -> str:
    """The command's stdout, once it has succeeded."""
    try:
        stdout, stderr = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr[-4000:]
    return stdout


@dataclass(frozen=True)
class ClusterRuns:
    """Both commands, started together: most of a local cluster's minute is its processes
    starting and registering with each other, which two clusters can do side by side."""

    report_log: list[dict[str, Any]]
    report: subprocess.Popen[str]
    sweep: subprocess.Popen[str]
    root: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterRuns]:
    root = tmp_path_factory.mktemp("on-a-cluster")
    log = messy_log(seed=3)
    (root / "log").mkdir()
    events = write_rotated(log, root / "log")
    # No Python on the executors: the report is Spark SQL only (as docs/analytics.md promises).
    report = _start_on_cluster(
        "report", root / "report-events", str(events), "--out", str(root / "report-out"),
        executor_python=str(root / "no-python-here"),
    )  # fmt: skip
    grid = ["--members", "5", "--topics", "3", "--partitions-per-topic", "4"]
    grid += ["--subscriptions", "mixed", "--racks", "0,3", "--churn", "3", "--seed", "2"]
    sweep = _start_on_cluster("sweep", root / "sweep-events", "--out", str(root / "sweep-out"),
                              *grid)  # fmt: skip
    yield ClusterRuns(log, report, sweep, root)
    for process in (report, sweep):
        if process.poll() is None:
            process.kill()
            process.communicate()


def _task_executors(spark_events: Path) -> Counter[str]:
    """Tasks per executor id, from Spark's event log of the one application run."""
    (log,) = spark_events.iterdir()
    executors: Counter[str] = Counter()
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerTaskEnd":
            executors[event["Task Info"]["Executor ID"]] += 1
    return executors


def _ran_on_both_executors(spark_events: Path) -> None:
    executors = _task_executors(spark_events)
    assert set(executors) == {"0", "1"}, executors  # never "driver"
    assert min(executors.values()) > 0


def test_report_on_a_cluster_equals_the_reference(spark: SparkSession, runs: ClusterRuns) -> None:
    log, out = runs.report_log, runs.root / "report-out"
    stdout = _finished(runs.report)

    assert f"{len(log)} lines: {len(log)} events, 0 quarantined" in stdout
    _ran_on_both_executors(runs.root / "report-events")
    episodes = spark.read.parquet(str(out / "episodes")).orderBy("group", "episode").collect()
    expected = assert_episodes_match(episodes, log)
    groups = spark.read.parquet(str(out / "groups")).orderBy("group").collect()
    assert_metrics_match(groups, log, expected)
    assert (out / "index.html").stat().st_size > 0


def test_sweep_on_a_cluster_equals_the_task_code(spark: SparkSession, runs: ClusterRuns) -> None:
    _finished(runs.sweep)

    _ran_on_both_executors(runs.root / "sweep-events")
    deterministic = [c for c in COLUMNS if c != "compute_ms"]
    rows = spark.read.parquet(str(runs.root / "sweep-out" / "sweep")).select(*deterministic)
    scenarios = [(5, 3, 4, "mixed", racks, 2) for racks in (0, 3)]
    expected = [
        dict(zip(COLUMNS, values, strict=True))
        for task in plan(scenarios, DEFAULT_ASSIGNORS, peers=True)
        for values in run_task(task, churn=3, peer_max_partitions=PEER_MAX_PARTITIONS)
    ]
    for row in expected:
        del row["compute_ms"]
    key = lambda r: tuple(str(r[c]) for c in deterministic)  # noqa: E731
    assert sorted((r.asDict() for r in rows.collect()), key=key) == sorted(expected, key=key)
    assert {r["implementation"] for r in expected} == {OURS, KAFKA_PYTHON}
