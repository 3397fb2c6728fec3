"""The `rebalance` console script: `serve` the Kafka-protocol coordinator, or run the `demo`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from coordinator.analytics.cli import (
    add_report_arguments,
    add_sweep_arguments,
    run_report,
    run_sweep,
)
from coordinator.app import Extension
from coordinator.core_demo import run_core_demo
from coordinator.demo import run_demo
from coordinator.groups import GroupCoordinatorExtension
from coordinator.serve import add_serve_arguments, serve_main
from coordinator.zookeeper.options import (
    BrokerRegistrationError,
    add_zk_offsets_arguments,
    add_zookeeper_arguments,
    run_zk_offsets,
    zookeeper_extensions,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rebalance", description="Kafka consumer-group rebalance protocol tools."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="the whole mission in a minute: server, real consumers, crashes, fencing, report",
    )
    demo.add_argument(
        "--output",
        type=Path,
        default=Path("demo-output"),
        metavar="DIR",
        help="data dir and HTML report go here; replaced on every run (demo-output)",
    )
    demo.add_argument(
        "--protocol",
        choices=["classic", "zookeeper"],
        default="classic",
        help="classic: the group coordinator (JoinGroup/SyncGroup); zookeeper: Kafka 0.8's "
        "ZooKeeper-coordinated consumers on a real ZooKeeper",
    )
    commands.add_parser(
        "walkthrough",
        help="a narrated walk through the group lifecycle on the pure core (no I/O, instant)",
    )
    serve = commands.add_parser(
        "serve", help="run the Kafka-protocol group coordinator and partition log"
    )
    add_serve_arguments(serve)
    add_zookeeper_arguments(serve)
    add_report_arguments(
        commands.add_parser("report", help="explain rebalances from an event log (PySpark)")
    )
    add_sweep_arguments(
        commands.add_parser("sweep", help="compare assignors over a grid of scenarios (PySpark)")
    )
    add_zk_offsets_arguments(
        commands.add_parser(
            "zk-offsets",
            help="owners, offsets and lag of a ZooKeeper-coordinated group (ConsumerOffsetChecker)",
        )
    )
    serve.add_argument(
        "--event-log",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the JSON Lines event log goes (default: DATA_DIR/events)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return run_demo(output=args.output, protocol=args.protocol)
    if args.command == "walkthrough":
        return run_core_demo()
    if args.command == "report":
        return run_report(args)
    if args.command == "sweep":
        return run_sweep(args)
    if args.command == "zk-offsets":
        return run_zk_offsets(args)
    if args.command == "serve":
        groups = GroupCoordinatorExtension(event_log_dir=args.event_log)
        try:
            extensions: list[Extension] = [groups, *zookeeper_extensions(args)]
            return serve_main(args, extensions=extensions, claims=[groups.claim])
        except BrokerRegistrationError as exc:
            print(f"rebalance serve: {exc}", file=sys.stderr)
            return 1
    raise AssertionError(f"unhandled command {args.command}")  # argparse rejects others


if __name__ == "__main__":
    sys.exit(main())
