"""Throughput of the report pipeline (events/s) from Parquet on local[1] and local[2].

A synthetic generator writes a realistic log as JSON Lines: groups of a few members that
rebalance now and then (started, join, sync, stable, sometimes superseded), commit offsets
between rebalances, and now and then get a fenced commit or an expired member. The JSONL is
converted once to the normalised Parquet table (its rate is the JSONL parse-and-validate rate);
then each master runs the whole pipeline (episodes, group metrics, quarantine, all written as
Parquet) in its own process, twice: the first run is what a one-shot `rebalance report` costs,
JIT compilation of Spark's code included (timed from the first job, JVM start excluded); the
second, in the same JVM, is what a long-lived session pays. Figures are medians over `--repeat`
processes. Last, one one-shot run on local[2] reads the JSON Lines directly, as users usually do.

There is no other implementation of this analysis to compare with; the ratios printed are the
scaling from one core to two.

Run: `.venv/bin/python benchmarks/bench_analytics.py [--events N] [--repeat N] [--dir DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMITS_PER_EPISODE = 20
PARTITIONS = 12


def _episode(group: str, generation: int, ts: int, members: list[str]) -> list[dict[str, object]]:
    base = {"v": 1, "node": 0, "group": group, "member": None}
    owned: dict[str, list[int]] = {m: [] for m in members}
    for p in range(PARTITIONS):
        owned[members[p % len(members)]].append(p)
    owners = {m: [["orders", partitions]] for m, partitions in owned.items()}
    return [
        base | {"ts": ts, "type": "rebalance_started", "generation": generation,
                "trigger": "member_joined", "members": len(members) - 1},
        base | {"ts": ts + 30, "type": "join_completed", "generation": generation + 1,
                "leader": members[0], "protocol": "range", "members": members},
        base | {"ts": ts + 40, "type": "sync_completed", "generation": generation + 1,
                "assignments": owners, "sizes": {m: 40 for m in members}},
        base | {"ts": ts + 41, "type": "group_stable", "generation": generation + 1},
    ]  # fmt: skip


def generate(path: Path, events: int, seed: int = 7) -> int:
    """Write about `events` events to `path` (JSONL); returns the exact number written."""
    rng = random.Random(seed)
    written = 0
    group_no = 0
    with path.open("w") as out:
        while written < events:
            group_no += 1
            group = f"group-{group_no}"
            ts, members = 1_700_000_000_000 + rng.randrange(10**6), ["m0"]
            for previous in range(rng.randrange(5, 30)):
                generation = previous + 1
                lines = _episode(group, previous, ts, members)
                ts += 41
                for _ in range(COMMITS_PER_EPISODE):
                    ts += rng.randrange(1, 5000)
                    member = rng.choice(members)
                    kind = rng.random()
                    if kind < 0.02:
                        lines.append({"v": 1, "ts": ts, "node": 0, "type": "commit_fenced",
                                      "group": group, "generation": generation - 1,
                                      "member": member, "error": "ILLEGAL_GENERATION",
                                      "code": 22})  # fmt: skip
                    else:
                        lines.append({"v": 1, "ts": ts, "node": 0, "type": "offset_commit",
                                      "group": group, "generation": generation,
                                      "member": member, "partitions": 3})  # fmt: skip
                if len(members) < 6:
                    members = [*members, f"m{len(members)}"]
                out.writelines(json.dumps(line) + "\n" for line in lines)
                written += len(lines)
                ts += rng.randrange(10_000, 600_000)
    return written


def to_parquet(jsonl: Path, parquet: Path) -> None:
    from coordinator.analytics.load import load_events, resolve_input
    from coordinator.analytics.session import build_session

    spark = build_session("local[2]", app_name="bench-convert")
    load_events(spark, resolve_input(str(jsonl))).events.write.mode("overwrite").parquet(
        str(parquet)
    )
    spark.stop()


def run_child(master: str, source: Path, out: Path, runs: int) -> list[float]:
    """Child process: the pipeline `runs` times in one JVM; the seconds each run took."""
    from coordinator.analytics.pipeline import run_pipeline
    from coordinator.analytics.session import build_session

    spark = build_session(master, app_name="bench-pipeline", shuffle_partitions=8)
    spark.range(1).count()  # start the executors before timing
    times = []
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        run_pipeline(spark, str(source), str(out), None, show_progress=False)
        times.append(time.perf_counter() - started)
    spark.stop()
    return times


def _jvm_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process `pid` has used so far, from `/proc/PID/stat`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_stages(master: str, source: Path, out: Path, runs: int) -> list[dict[str, float]]:
    """Child process: the pipeline `runs` times in one JVM; per run, the JVM CPU seconds of each
    table written (keyed by its directory name: the job that computes it), of the work between
    the writes (`other`: the activity scan and its totals) and in all (`total`).

    CPU seconds, not wall time: on a machine shared with other work they hold still where
    elapsed time swings twofold. Works for any tree whose pipeline writes its tables with
    `DataFrameWriter.parquet` (put its `src` first on PYTHONPATH to measure another commit).
    """
    from pyspark.sql.readwriter import DataFrameWriter

    from coordinator.analytics.pipeline import run_pipeline
    from coordinator.analytics.session import build_session

    spark = build_session(master, app_name="bench-pipeline", shuffle_partitions=8)
    spark.range(1).count()
    jvm = spark._jvm
    assert jvm is not None
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    stages: dict[str, float] = {}
    write = DataFrameWriter.parquet

    def timed_write(self: DataFrameWriter, path: str, *args: object, **kwargs: object) -> None:
        before = _jvm_cpu_s(pid)
        write(self, path, *args, **kwargs)  # type: ignore[arg-type]
        name = Path(path).name
        stages[name] = stages.get(name, 0.0) + _jvm_cpu_s(pid) - before

    DataFrameWriter.parquet = timed_write  # type: ignore[method-assign]
    results = []
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        stages.clear()
        started = _jvm_cpu_s(pid)
        run_pipeline(spark, str(source), str(out), None, show_progress=False)
        total = _jvm_cpu_s(pid) - started
        results.append({**stages, "other": total - sum(stages.values()), "total": total})
    spark.stop()
    return results


def in_child(master: str, source: Path, out: Path, runs: int) -> list[float]:
    child = [sys.executable, __file__, "--child", master, str(source), str(out), str(runs)]
    result = subprocess.run(child, capture_output=True, text=True, check=True)
    return [float(t) for t in result.stdout.strip().splitlines()[-1].split(",")]


def rate(count: int, seconds: float) -> str:
    return f"{seconds:.1f} s, {count / seconds:,.0f} events/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("data/bench_analytics"))
    parser.add_argument("--child", nargs=4, metavar=("MASTER", "SOURCE", "OUT", "RUNS"))
    parser.add_argument(
        "--stages",
        nargs=4,
        metavar=("MASTER", "SOURCE", "OUT", "RUNS"),
        help="JVM CPU seconds of each stage of RUNS runs in one JVM, one JSON object a run",
    )
    args = parser.parse_args()
    if args.stages:
        master, source, out, runs = args.stages
        for stages in run_stages(master, Path(source), Path(out), int(runs)):
            print(json.dumps({k: round(v, 2) for k, v in stages.items()}))
        return
    if args.child:
        master, source, out, runs = args.child
        print(",".join(str(t) for t in run_child(master, Path(source), Path(out), int(runs))))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    jsonl, parquet = args.dir / "events.jsonl", args.dir / "events.parquet"
    started = time.perf_counter()
    count = generate(jsonl, args.events)
    print(f"generated {count:,} events in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    to_parquet(jsonl, parquet)
    print(f"JSONL -> normalised Parquet (local[2]): {rate(count, time.perf_counter() - started)}")
    out = args.dir / "out"
    medians: dict[tuple[str, str], float] = {}
    for master in ("local[1]", "local[2]"):
        runs = [in_child(master, parquet, out, 2) for _ in range(args.repeat)]
        for index, kind in enumerate(("one-shot", "warm")):
            times = [r[index] for r in runs]
            medians[master, kind] = statistics.median(times)
            listed = ", ".join(f"{t:.1f}" for t in times)
            print(f"{master} {kind:8}: median {rate(count, medians[master, kind])} ({listed} s)")
    for kind in ("one-shot", "warm"):
        ratio = medians["local[1]", kind] / medians["local[2]", kind]
        print(f"scaling local[2] / local[1], {kind}: {ratio:.2f}x")
    print(f"target >= 300,000 events/s on 2 cores from Parquet: one-shot "
          f"{count / medians['local[2]', 'one-shot']:,.0f}, "
          f"warm {count / medians['local[2]', 'warm']:,.0f}")  # fmt: skip
    from_jsonl = in_child("local[2]", jsonl, out, 1)[0]
    print(f"local[2] one-shot from JSONL: {rate(count, from_jsonl)}")
    print(f"machine: {os.cpu_count()} cores, {platform.python_implementation()} "
          f"{platform.python_version()}, {platform.machine()}")  # fmt: skip


if __name__ == "__main__":
    main()
