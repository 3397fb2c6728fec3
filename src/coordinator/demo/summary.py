"""The demo's closing summary: the Spark report run on its event log, and what it found, told
in a few lines (`summarise` computes it, `tell` prints it; `explain` does both)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.demo.common import Say


@dataclass(frozen=True)
class Episode:
    """One rebalance as the report counts it."""

    label: str  # "generation N" (the classic group's), else "episode N"
    trigger: str
    outcome: str
    duration_ms: int
    partitions_moved: int | None  # None: the report could not measure it


@dataclass(frozen=True)
class ZooKeeperEpisode:
    episode: int
    runs: int
    failed_claim_rounds: int
    zk_ops: int
    time_without_partitions_ms: int


@dataclass(frozen=True)
class Summary:
    events: int
    quarantined: int
    episodes: tuple[Episode, ...]
    zookeeper: tuple[ZooKeeperEpisode, ...]
    report: Path


def summarise(events_dir: Path, out: Path) -> Summary:
    """Run the Spark report on the event log in `events_dir` (written to `out`) and read back
    its episodes, in time order."""
    from coordinator.analytics.pipeline import run_pipeline
    from coordinator.analytics.session import build_session, stop_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local demo: stay on loopback
    spark = build_session("local[*]")
    try:
        counts = run_pipeline(spark, str(events_dir), str(out), out, show_progress=False)
        episodes = spark.read.parquet(str(out / "episodes")).orderBy("start_ts").collect()
        zookeeper = (
            spark.read.parquet(str(out / "zookeeper")).orderBy("start_ts").collect()
            if (out / "zookeeper").exists()
            else []
        )
    finally:
        stop_session(spark)  # "nothing left running" includes Spark's JVM
    return Summary(
        counts.events,
        counts.quarantined,
        tuple(_episode(e) for e in episodes),
        tuple(
            ZooKeeperEpisode(
                z["episode"],
                z["runs"],
                z["failed_claim_rounds"],
                z["zk_ops"],
                z["time_without_partitions_ms"],
            )
            for z in zookeeper
        ),
        (out / "index.html").resolve(),
    )


def _episode(e: Any) -> Episode:
    """An `episodes` row (a Spark `Row`)."""
    generation = "-" if e["generation"] is None else e["generation"]  # none: group emptied
    label = f"episode {e['episode']}" if e["node"] == -1 else f"generation {generation}"
    return Episode(label, e["trigger"], e["outcome"], e["duration_ms"], e["partitions_moved"])


def tell(summary: Summary, say: Say) -> None:
    say(
        f"{summary.events} events ({summary.quarantined} malformed lines) -> "
        f"{len(summary.episodes)} episodes"
    )
    for e in summary.episodes:
        say(
            f"    {e.label}: {e.trigger:<14} {e.outcome:<9} "
            f"{e.duration_ms:>6} ms, {e.partitions_moved} partitions moved"
        )
    for z in summary.zookeeper:
        say(
            f"    ZooKeeper episode {z.episode}: {z.runs} consumer runs, "
            f"{z.failed_claim_rounds} failed claim rounds, {z.zk_ops} ZooKeeper requests, "
            f"{z.time_without_partitions_ms} ms without partitions (all consumers)"
        )
    say(f"report: {summary.report}")


def explain(events_dir: Path, out: Path, say: Say) -> None:
    """Run the Spark report on the demo's event log and summarise its episodes."""
    say("\nexplaining the rebalances with Spark (local mode)...")
    tell(summarise(events_dir, out), say)
