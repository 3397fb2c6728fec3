"""Both Spark commands on a cluster: nothing in them may assume one machine.

`local-cluster[2,1,768]` is Spark's own test cluster: a master and two workers, each executor its
own JVM with its own Python workers, talking to the driver over the network as on any standalone
cluster. The commands run as a user would start them (a separate process, `--master`, `--conf`),
and their outputs must equal what the plain-Python reference (report) and the task code run here
(sweep) say. Spark's own event log proves the tasks ran on the executors, not in the driver.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_runs import CLUSTER_RUNS, ClusterRuns, finished, start_cluster_runs
from pyspark.sql import SparkSession
from reference_comparison import assert_episodes_match, assert_metrics_match

from coordinator.analytics.session import build_session
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


@pytest.fixture(scope="module")
def spark() -> SparkSession:
    """A live session to read the outputs with: these tests run last, and a test before them
    may have stopped the session the others share."""
    return build_session("local[2]", app_name="rebalance-analytics-tests", shuffle_partitions=2)


@pytest.fixture(scope="module")
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterRuns]:
    """The runs the session started (`conftest.py`), or started now when it did not."""
    started: ClusterRuns | None = request.config.stash.get(CLUSTER_RUNS, None)
    if started is not None:
        yield started
        return
    runs = start_cluster_runs(tmp_path_factory.mktemp("on-a-cluster"))
    yield runs
    runs.stop()


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
    stdout = finished(runs.report, runs.root / "report-events")

    assert stdout == ""  # --quiet: the counts are checked against the reference below
    _ran_on_both_executors(runs.root / "report-events")
    episodes = spark.read.parquet(str(out / "episodes")).orderBy("group", "episode").collect()
    expected = assert_episodes_match(episodes, log)
    groups = spark.read.parquet(str(out / "groups")).orderBy("group").collect()
    assert_metrics_match(groups, log, expected)
    assert (out / "index.html").stat().st_size > 0


def test_sweep_on_a_cluster_equals_the_task_code(spark: SparkSession, runs: ClusterRuns) -> None:
    finished(runs.sweep, runs.root / "sweep-events")

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
