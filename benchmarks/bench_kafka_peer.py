"""Apache Kafka's broker as the tests and benchmarks start it
(`coordinator.testing.peers.kafka_broker`): how long a start takes and how much memory the JVM
holds, so the suite's cost of the oracle is known and the later side-by-side figures have Kafka's
start-up and idle RSS.

Each run starts one broker (fresh temporary log dir, free ports), from launching the format step
(`kafka-storage format`, a JVM of its own) to the first FindCoordinator answered without error
(the offsets topic loaded), then reads the JVM's RSS at once and again after `--settle` seconds
idle, and stops it. Medians over `--runs` runs; the machine's load before and after.

`--jvm tests` uses the launcher's options (384 MiB heap, SerialGC, C1 only); `--jvm kafka` those
of Kafka's own start script (1 GiB heap, G1).

Run: .venv/bin/python benchmarks/bench_kafka_peer.py [--runs 5] [--jvm tests|kafka]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from coordinator.testing.peers.kafka_broker import JVM_OPTIONS, KAFKA_VERSION, KafkaBroker

KAFKA_SCRIPT_OPTIONS = (
    "-Xmx1G", "-Xms1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--jvm", choices=("tests", "kafka"), default="tests")
    args = parser.parse_args()
    options = JVM_OPTIONS if args.jvm == "tests" else KAFKA_SCRIPT_OPTIONS
    load_before = os.getloadavg()[0]
    started, formatted, rss_ready, rss_idle = [], [], [], []
    for _ in range(args.runs):
        broker = KafkaBroker.start(jvm_options=options)
        try:
            rss_ready.append(broker.rss_bytes() / 2**20)
            time.sleep(args.settle)
            rss_idle.append(broker.rss_bytes() / 2**20)
            started.append(broker.started_in_s)
            formatted.append(broker.formatted_in_s)
        finally:
            broker.stop()
    load_after = os.getloadavg()[0]
    print(f"Kafka {KAFKA_VERSION}, JVM options {args.jvm}: {args.runs} starts, "
          f"load {load_before:.1f} -> {load_after:.1f}")  # fmt: skip
    print(f"  start to serving groups  median {statistics.median(started):.2f} s "
          f"(min {min(started):.2f}, max {max(started):.2f})")  # fmt: skip
    print(f"  of which the format step median {statistics.median(formatted):.2f} s")
    print(f"  RSS when ready           median {statistics.median(rss_ready):.0f} MiB")
    print(f"  RSS idle {args.settle:.0f} s later      median {statistics.median(rss_idle):.0f} MiB")


if __name__ == "__main__":
    main()
