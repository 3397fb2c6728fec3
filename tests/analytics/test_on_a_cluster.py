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
from pathlib import Path

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


def _run_on_cluster(
    command: str, spark_events: Path, *argv: str, executor_python: str = sys.executable
) -> str:
    """Run `python -m coordinator.analytics COMMAND` on the cluster; its stdout."""
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
    result = subprocess.run(
        [sys.executable, "-m", "coordinator.analytics", command, "--master", CLUSTER,
         *settings, "--quiet", *argv],
        capture_output=True, text=True, timeout=600, check=False,
        env=os.environ | {"PYSPARK_PYTHON": executor_python},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


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


def test_report_on_a_cluster_equals_the_reference(spark: SparkSession, tmp_path: Path) -> None:
    log = messy_log(seed=3)
    (tmp_path / "log").mkdir()
    events = write_rotated(log, tmp_path / "log")
    out = tmp_path / "out"
    # No Python on the executors: the report is Spark SQL only (as docs/analytics.md promises).
    no_python = str(tmp_path / "no-python-here")
    stdout = _run_on_cluster(
        "report", tmp_path / "spark-events", str(events), "--out", str(out),
        executor_python=no_python,
    )  # fmt: skip

    assert f"{len(log)} lines: {len(log)} events, 0 quarantined" in stdout
    _ran_on_both_executors(tmp_path / "spark-events")
    episodes = spark.read.parquet(str(out / "episodes")).orderBy("group", "episode").collect()
    expected = assert_episodes_match(episodes, log)
    groups = spark.read.parquet(str(out / "groups")).orderBy("group").collect()
    assert_metrics_match(groups, log, expected)
    assert (out / "index.html").stat().st_size > 0


def test_sweep_on_a_cluster_equals_the_task_code(spark: SparkSession, tmp_path: Path) -> None:
    grid = ["--members", "5", "--topics", "3", "--partitions-per-topic", "4"]
    grid += ["--subscriptions", "mixed", "--racks", "0,3", "--churn", "3", "--seed", "2"]
    out = tmp_path / "out"
    _run_on_cluster("sweep", tmp_path / "spark-events", "--out", str(out), *grid)

    _ran_on_both_executors(tmp_path / "spark-events")
    deterministic = [c for c in COLUMNS if c != "compute_ms"]
    rows = spark.read.parquet(str(out / "sweep")).select(*deterministic).collect()
    scenarios = [(5, 3, 4, "mixed", racks, 2) for racks in (0, 3)]
    expected = [
        dict(zip(COLUMNS, values, strict=True))
        for task in plan(scenarios, DEFAULT_ASSIGNORS, peers=True)
        for values in run_task(task, churn=3, peer_max_partitions=PEER_MAX_PARTITIONS)
    ]
    for row in expected:
        del row["compute_ms"]
    key = lambda r: tuple(str(r[c]) for c in deterministic)  # noqa: E731
    assert sorted((r.asDict() for r in rows), key=key) == sorted(expected, key=key)
    assert {r["implementation"] for r in expected} == {OURS, KAFKA_PYTHON}
