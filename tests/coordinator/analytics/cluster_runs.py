"""Both Spark commands started on clusters of their own, for `test_on_a_cluster.py`.

A local cluster's minute is mostly its JVMs starting and registering with each other. The
commands are started when the test session has collected its tests (`conftest.py`), at the
lowest CPU priority (`nice -n 19`), and their tests run last: the clusters work while the rest
of the suite waits on timers, sockets and subprocesses, and take no CPU a foreground test wants.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from messy_log import messy_log, write_rotated

CLUSTER = "local-cluster[2,1,768]"
"""Two workers of one core and 768 MB each: small enough for a 2-core CI machine."""

#: The test module whose runs these are (its tests are moved to the end of the session).
MODULE = "test_on_a_cluster.py"
#: The sweep's grid: 5 members, 3 topics of 4 partitions, mixed subscriptions, 0 and 3 racks.
SWEEP_GRID = (
    "--members", "5", "--topics", "3", "--partitions-per-topic", "4", "--subscriptions",
    "mixed", "--racks", "0,3", "--churn", "3", "--seed", "2",
)  # fmt: skip


@dataclass(frozen=True)
class ClusterRuns:
    """Both commands, started together (two clusters start side by side)."""

    report_log: list[dict[str, Any]]
    report: subprocess.Popen[str]
    sweep: subprocess.Popen[str]
    root: Path

    def stop(self) -> None:
        for process in (self.report, self.sweep):
            if process.poll() is None:
                process.kill()
                process.wait()


#: Where the session keeps the runs it started.
CLUSTER_RUNS = pytest.StashKey["ClusterRuns"]()


def start_cluster_runs(root: Path) -> ClusterRuns:
    log = messy_log(seed=3)
    (root / "log").mkdir(parents=True)
    events = write_rotated(log, root / "log")
    # No Python on the executors: the report is Spark SQL only (as docs/analytics.md promises).
    report = _start_on_cluster(
        "report", root / "report-events", str(events), "--out", str(root / "report-out"),
        executor_python=str(root / "no-python-here"),
    )  # fmt: skip
    sweep = _start_on_cluster(
        "sweep", root / "sweep-events", "--out", str(root / "sweep-out"), *SWEEP_GRID
    )
    return ClusterRuns(log, report, sweep, root)


def _start_on_cluster(
    command: str, spark_events: Path, *argv: str, executor_python: str = sys.executable
) -> subprocess.Popen[str]:
    """Start `python -m coordinator.analytics COMMAND` on a cluster of its own, niced."""
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
    # Files, not pipes: nobody reads while the rest of the suite runs, and a full pipe would
    # stop the command.
    with (
        open(spark_events.with_suffix(".out"), "w") as out,
        open(spark_events.with_suffix(".err"), "w") as err,
    ):
        return subprocess.Popen(
            ["nice", "-n", "19", sys.executable, "-m", "coordinator.analytics", command,
             "--master", CLUSTER, *settings, "--quiet", *argv],
            stdout=out, stderr=err, text=True,
            env=os.environ | {"PYSPARK_PYTHON": executor_python},
        )  # fmt: skip


def finished(process: subprocess.Popen[str], spark_events: Path) -> str:
    """The command's stdout, once it has succeeded (`spark_events` as it was started with)."""
    try:
        process.wait(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = spark_events.with_suffix(".err").read_text()
    assert process.returncode == 0, stderr[-4000:]
    return spark_events.with_suffix(".out").read_text()
