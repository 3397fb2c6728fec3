"""Start Spark: `local[*]` by default, any cluster when the user passes a master URL."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

MASTER_PATTERNS = (
    r"local",
    r"local\[(\*|[1-9]\d*)\]",
    r"local\[(\*|[1-9]\d*),\s*[1-9]\d*\]",
    r"local-cluster\[\d+,\s*\d+,\s*\d+\]",
    r"spark://[^\s/]+(:\d+)?(,[^\s/]+(:\d+)?)*",
    r"yarn",
    r"k8s://\S+",
    r"mesos://\S+",
)


class MasterURLError(ValueError):
    """The master URL is not one Spark understands."""


def check_master(master: str) -> str:
    """Reject a malformed master URL before the JVM starts, with a message that shows the forms."""
    if any(re.fullmatch(p, master) for p in MASTER_PATTERNS):
        return master
    raise MasterURLError(
        f"bad Spark master URL {master!r}: expected local, local[N], local[*], "
        "local-cluster[WORKERS,CORES,MEMORY_MB], spark://HOST:PORT, yarn or k8s://URL"
    )


class SparkConfError(ValueError):
    """A `--conf` setting is not `spark.KEY=VALUE`."""


def parse_conf(settings: list[str]) -> dict[str, str]:
    """`KEY=VALUE` settings as given to spark-submit's `--conf`, checked before the JVM starts.

    Only `spark.*` keys: anything else would be ignored by Spark without a word, and a setting
    that does nothing is worse than an error. A later setting of the same key wins.
    """
    conf: dict[str, str] = {}
    for setting in settings:
        key, equals, value = setting.partition("=")
        key = key.strip()
        if not equals or not key.startswith("spark.") or key == "spark.":
            raise SparkConfError(f"bad --conf {setting!r}: expected spark.KEY=VALUE")
        conf[key] = value
    return conf


def build_session(
    master: str = "local[*]",
    *,
    app_name: str = "rebalance-analytics",
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
    jvm_output: Path | None = None,
) -> SparkSession:
    """A session for our jobs: no UI, UTC, code generation HotSpot can compile.

    `shuffle_partitions`: None is a few per core in local mode (`local_shuffle_partitions`),
    Spark's default on a cluster. `conf` (the user's `--conf` settings) is applied last, so it
    overrides our defaults.
    `jvm_output`: when this call launches the JVM, its own stdout and stderr go to this file
    rather than to ours, printed only if the start fails (`--quiet`: the JVM prints a module
    warning before any logging starts; a job's errors still reach Python, through Py4J).
    """
    options = {
        "spark.master": check_master(master),
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Validation is one long CASE over every rule; inferring constraints from it through the
        # later filters and joins costs the optimizer minutes and gigabytes for nothing.
        "spark.sql.constraintPropagation.enabled": "false",
        # HotSpot does not compile methods over 8000 bytes of bytecode; a stage whose generated
        # method is larger would run in the bytecode interpreter. Spark's advice for HotSpot:
        # fall back to per-operator code (split into small methods) above that size.
        "spark.sql.codegen.hugeMethodLimit": "8000",
        # The throughput collector: a report is a batch job whose pauses nobody waits on, and G1
        # (the JVM's default on two cores) spends more CPU on its concurrent work and barriers;
        # measured in benchmarks/RESULTS.md (analytics). Takes effect when this call launches the
        # JVM (local mode, a client driver); `conf` can set other options.
        "spark.driver.extraJavaOptions": f"-XX:+UseParallelGC {_quiet_log4j()}",
    }
    if shuffle_partitions is None:
        shuffle_partitions = local_shuffle_partitions(master)
    if shuffle_partitions is not None:
        options["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    options.update(conf or {})
    if jvm_output is not None and SparkContext._gateway is None:
        _launch_jvm(options, jvm_output)
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


#: Shuffle partitions per local core when the caller names none.
LOCAL_SHUFFLE_PARTITIONS_PER_CORE = 4


def local_shuffle_partitions(master: str) -> int | None:
    """Shuffle partitions for a local master: a few per core, not Spark's 200, which are sized
    for a cluster; on one machine each of 200 tasks per shuffle costs its fixed overhead
    whatever the input (benchmarks/RESULTS.md, analytics). None for a cluster master: Spark's
    own default, or what the user's `--conf` sets, stands."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master)
    if match is None:
        return None
    threads = match.group(1)
    if threads is None:
        cores = 1
    elif threads == "*":
        cores = os.cpu_count() or 1
    else:
        cores = int(threads)
    return LOCAL_SHUFFLE_PARTITIONS_PER_CORE * cores


def _launch_jvm(options: Mapping[str, str], output: Path) -> None:
    """Start the driver JVM as PySpark would, its own output going to `output`: shown if the
    start fails, else unlinked at once (the JVM writes on into the nameless file, gone when it
    exits)."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    spark_conf = SparkConf().setAll(list(options.items()))
    launch: Any = launch_gateway  # untyped in PySpark
    try:
        with output.open("wb") as sink:  # the JVM keeps its own copy of the descriptor
            gateway = launch(spark_conf, popen_kwargs={"stdout": sink, "stderr": sink})
    except Exception:
        sys.stderr.write(output.read_text(errors="replace"))
        raise
    finally:
        output.unlink(missing_ok=True)
    SparkContext(conf=spark_conf, gateway=gateway)


def _quiet_log4j() -> str:
    """The JVM option naming our log4j2 file (errors only): Spark's default profile prints a
    banner and its warnings, which `--quiet` and every report would show."""
    path = Path(__file__).with_name("log4j2.properties")
    return f"-Dlog4j2.configurationFile={path.as_uri()}"


def stop_session(spark: SparkSession, *, timeout_s: float = 30.0) -> None:
    """Stop Spark and, when this process launched the JVM, the JVM too, waiting until it is gone.

    PySpark leaves its JVM running until the Python process exits; a caller that says nothing is
    left running (the demo) must end it itself. The JVM exits when its stdin closes; it is killed
    if it has not after `timeout_s`. A later `build_session` launches a new one.
    """
    spark.stop()
    gateway = SparkContext._gateway
    process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    if gateway is None or process is None:  # attached to a JVM this process did not start
        return
    gateway.shutdown()
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None
