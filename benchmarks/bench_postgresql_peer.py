"""PostgreSQL as the cluster tests and benchmarks start it (`coordinator.testing.peers.postgresql`):
how long a start takes (initdb, then the server up to ready), how long the per-test database
of the `postgresql_database` fixture costs (CREATE DATABASE, and its DROP ... WITH (FORCE)),
and how long a fast shutdown takes, so the suite's cost of its PostgreSQL is known.

Medians over `--runs` runs; the machine's load before and after.

Run: .venv/bin/python benchmarks/bench_postgresql_peer.py [--runs 5] [--databases 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import psycopg

from coordinator.testing.peers.postgresql import PostgreSQLServer, bin_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--databases", type=int, default=20)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    started, initdb, created, dropped, stopped = [], [], [], [], []
    for _ in range(args.runs):
        server = PostgreSQLServer.start()
        try:
            started.append(server.started_in_s)
            initdb.append(server.initdb_in_s)
            with psycopg.connect(server.url(), autocommit=True) as admin:
                for n in range(args.databases):
                    began = time.perf_counter()
                    admin.execute(f"CREATE DATABASE bench_{n}")
                    created.append(time.perf_counter() - began)
                    began = time.perf_counter()
                    admin.execute(f"DROP DATABASE bench_{n} WITH (FORCE)")
                    dropped.append(time.perf_counter() - began)
        finally:
            began = time.perf_counter()
            server.stop()
            stopped.append(time.perf_counter() - began)
    load_after = os.getloadavg()[0]
    print(f"PostgreSQL from {bin_dir()}: {args.runs} starts, load {load_before:.1f} -> "
          f"{load_after:.1f}")  # fmt: skip
    print(f"  start to ready            median {statistics.median(started):.2f} s "
          f"(min {min(started):.2f}, max {max(started):.2f})")  # fmt: skip
    print(f"  of which initdb           median {statistics.median(initdb):.2f} s")
    print(f"  CREATE DATABASE           median {statistics.median(created) * 1000:.0f} ms")
    print(f"  DROP DATABASE WITH FORCE  median {statistics.median(dropped) * 1000:.0f} ms")
    print(f"  fast shutdown             median {statistics.median(stopped):.2f} s")


if __name__ == "__main__":
    main()
