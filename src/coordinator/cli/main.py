"""The `rebalance` console script: `serve` the Kafka-protocol coordinator, `repair` a data dir,
run the `demo` or the `walkthrough`, list and describe `groups`, manage SASL `users`, and (with
the `analytics` extra) `report` and `sweep`; `zk-offsets` shows a ZooKeeper-coordinated group (the
`zookeeper` extra).

Failures end with one line on stderr and an exit status (see `coordinator.command_line`): 2 for
a wrong command line, 1 for what stops a command at run time; `--debug` (`-v`) adds the
traceback. `report` and `sweep` are parsed by `coordinator.analytics.cli` once PySpark is
known to be installed, so a plain install (no extras) never imports it and still serves.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from coordinator.cli.cluster import (
    add_cluster_command,
    add_cluster_serve_arguments,
    run_cluster,
    serve_parts,
)
from coordinator.cli.serve import add_serve_arguments
from coordinator.cli.users import add_users_arguments
from coordinator.cli.zookeeper import (
    add_zk_offsets_arguments,
    add_zookeeper_arguments,
    run_zk_offsets,
    zookeeper_extensions,
)
from coordinator.command_line import (
    OneLineParser,
    add_debug_argument,
    run_command,
    usage_error,
)
from coordinator.errors import MissingExtraError, UsageError
from rebalance.distribution import DISTRIBUTION, __version__

ANALYTICS = {
    "report": "explain rebalances from an event log",
    "sweep": "compare assignors over a grid of scenarios",
}
"""Commands that need the `analytics` extra, with their help line."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="rebalance", description="Kafka consumer-group rebalance protocol tools."
    )
    parser.add_argument(
        "--version", action="version", version=f"rebalance ({DISTRIBUTION}) {__version__}",
        help="print the version of the installed rebalance-kafka distribution and exit",
    )  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="the whole mission in a minute: server, real consumers, crashes, fencing, report "
        "(needs the aiokafka and analytics extras)",
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
        choices=["classic", "consumer", "cooperative", "zookeeper", "client-balance", "cluster"],
        default="classic",
        help="classic: the group coordinator (JoinGroup/SyncGroup); consumer: KIP-848 groups "
        "with librdkafka consumers (needs the consumer extra); cooperative: KIP-429 "
        "incremental rebalancing with this package's GroupMember under aiokafka consumers; "
        "zookeeper: Kafka 0.8's "
        "ZooKeeper-coordinated consumers on a real ZooKeeper (needs the zookeeper extra); "
        "client-balance: TubeMQ's client-side assignment (nodes pick and register their "
        "partitions); cluster: three coordinator nodes on a PostgreSQL of its own, the busiest "
        "killed, one frozen past its lease (needs the cluster extra and Debian's postgresql; "
        "no report)",
    )
    demo.add_argument(
        "--no-report",
        action="store_true",
        help="tell the story and keep its event log, without the Spark report (no analytics "
        "extra or Java needed; `rebalance report DIR/data/events --out DIR/report` explains "
        "it later)",
    )
    walkthrough = commands.add_parser(
        "walkthrough",
        help="a narrated walk through the group lifecycle on the pure core (no I/O, instant)",
    )
    serve = commands.add_parser(
        "serve", help="run the Kafka-protocol group coordinator and partition log"
    )
    add_serve_arguments(serve)
    add_cluster_serve_arguments(serve)
    add_zookeeper_arguments(serve)
    serve.add_argument(
        "--event-log",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the JSON Lines event log goes (default: DATA_DIR/events)",
    )
    repair = commands.add_parser(
        "repair",
        help="report damaged partition logs of a data dir; cut them with --truncate",
        description="Scan every partition log of a stopped server's data dir and report damage, "
        "and check its other files (topic.json, log start offsets, producer-ids, groups.sqlite). "
        "With --truncate, copy each damaged log to DATA_DIR/backups/ and cut it after its last "
        "valid batch, as Kafka's log recovery does.",
    )
    repair.add_argument(
        "--data-dir", type=Path, required=True, metavar="DIR",
        help="the data dir of a stopped server (as given to rebalance serve --data-dir)",
    )  # fmt: skip
    repair.add_argument(
        "--truncate",
        action="store_true",
        help="cut each damaged log at the damage (a copy of the whole file is kept first)",
    )
    zk_offsets = commands.add_parser(
        "zk-offsets",
        help="owners, offsets and lag of a ZooKeeper-coordinated group, as 0.8's "
        "ConsumerOffsetChecker (needs the zookeeper extra)",
    )
    add_zk_offsets_arguments(zk_offsets)
    conformance = commands.add_parser(
        "conformance",
        help="check a Kafka-compatible broker's group coordinator against Kafka's rules",
        description="Run the classic-group rules as wire scenarios against a broker and report, "
        "rule by rule, where its group coordinator differs from Kafka's. Exit status 1 on any "
        "failure.",
    )
    conformance.add_argument(
        "--bootstrap", required=True, metavar="HOST:PORT",
        help="the broker under test (any Kafka-compatible broker; its group coordinator is "
        "found through it)",
    )  # fmt: skip
    conformance.add_argument(
        "--assume",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting the scenarios may rely on, for brokers without DescribeConfigs "
        "(e.g. group.initial.rebalance.delay.ms=3000); repeatable",
    )
    conformance.add_argument("-k", dest="pattern", metavar="TEXT", help="only scenarios naming it")
    conformance.add_argument("--json", type=Path, metavar="FILE", help="write the results as JSON")
    conformance.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    conformance.add_argument(
        "--differential-steps",
        type=int,
        default=10_000,
        metavar="N",
        help="steps of the differential run (scenario differential.lockstep; default 10000)",
    )
    conformance.add_argument(
        "--keep",
        action="store_true",
        help="keep the groups and topics the run used (removed at the end by default)",
    )
    conformance.add_argument(
        "--replay",
        metavar="STEPS",
        help="run these steps of the differential run once, as a failure prints them "
        "(separated by ';' or newlines), instead of the scenarios",
    )
    groups = commands.add_parser(
        "groups",
        help="list a server's groups, or describe one (client-balance groups: each node's "
        "sourceCount, nodeId and partitions)",
    )
    group_commands = groups.add_subparsers(dest="groups_command", required=True, metavar="WHAT")
    listing = group_commands.add_parser("list", help="every group with its type and state")
    describe = group_commands.add_parser("describe", help="one group's members and partitions")
    describe.add_argument("group", metavar="GROUP", help="the group id")
    for sub in (listing, describe):
        sub.add_argument(
            "--bootstrap", default="127.0.0.1:9092", metavar="HOST:PORT",
            help="the server to ask (default 127.0.0.1:9092)",
        )  # fmt: skip
        add_debug_argument(sub)
    add_users_arguments(commands)
    add_cluster_command(commands)
    for command, purpose in ANALYTICS.items():
        # Parsed by coordinator.analytics.cli (see `main`); `--help` there too.
        analytics = commands.add_parser(
            command, help=f"{purpose} (PySpark; needs the analytics extra)", add_help=False
        )
        add_debug_argument(analytics)
    for subcommand in (
        demo,
        walkthrough,
        repair,
        zk_offsets,
        conformance,
    ):  # serve: in add_serve_arguments
        add_debug_argument(subcommand)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    prog = f"rebalance {args.command}"
    if args.command in ANALYTICS:
        return run_command(prog, args.debug, lambda: _analytics(args.command, rest))
    if rest:
        return usage_error(prog, f"unrecognized arguments: {' '.join(rest)}")
    return run_command(prog, args.debug, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        if args.protocol == "consumer":  # librdkafka produces and consumes
            _require("consumer", "confluent_kafka")
        elif args.protocol != "client-balance":  # its nodes are this package's client
            _require("aiokafka", "aiokafka")
        if not args.no_report and args.protocol != "cluster":  # a cluster's story has no report
            _require("analytics", "pyspark", "matplotlib")
        if args.protocol == "cluster":
            _require("cluster", "psycopg")
        if args.protocol == "zookeeper":
            _require("zookeeper", "kazoo")
        from coordinator.demo.story import run_demo

        return run_demo(output=args.output, protocol=args.protocol, report=not args.no_report)
    if args.command == "walkthrough":
        from coordinator.demo.walkthrough import run_walkthrough

        return run_walkthrough()
    if args.command == "conformance":
        from coordinator.cli.conformance import run_conformance

        if args.replay is not None:
            _require("conformance", "hypothesis")
        return run_conformance(
            args.bootstrap,
            assume=_assumed(args.assume),
            pattern=args.pattern,
            json_path=args.json,
            junit_path=args.junit,
            differential_steps=args.differential_steps,
            replay=args.replay,
            keep=args.keep,
        )
    if args.command == "zk-offsets":
        _require("zookeeper", "kazoo")
        return run_zk_offsets(args)
    if args.command == "groups":
        from coordinator.cli.groups import run_groups

        return run_groups(args)
    if args.command == "users":
        from coordinator.cli.users import run_users

        return run_users(args)
    if args.command == "repair":
        from coordinator.cli.repair import repair
        from coordinator.groups.extension import STORE_FILE
        from coordinator.groups.store.sqlite import inspect_store

        return repair(args.data_dir, truncate=args.truncate, stores={STORE_FILE: inspect_store})
    if args.command == "serve":
        from coordinator.cli.serve import serve_main
        from coordinator.groups.extension import GroupCoordinatorExtension

        groups = GroupCoordinatorExtension(event_log_dir=args.event_log)
        parts = serve_parts(args, groups)
        zookeeper = zookeeper_extensions(args)
        return serve_main(
            args,
            extensions=[*parts.extensions, *zookeeper],
            claims=parts.claims,
            stopping=parts.stopping,
        )
    if args.command == "cluster":
        return run_cluster(args)
    raise AssertionError(f"unhandled command {args.command}")  # argparse rejects others


def _assumed(pairs: list[str]) -> dict[str, str]:
    assumed = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not value.strip().lstrip("-").isdigit():
            raise UsageError(f"--assume wants KEY=MILLISECONDS-OR-COUNT, not {pair!r}")
        assumed[key.strip()] = value.strip()
    return assumed


def _analytics(command: str, rest: list[str]) -> int:
    _require("analytics", "pyspark", "matplotlib")
    from coordinator.analytics.cli import main as analytics_main

    return analytics_main([command, *rest], prog="rebalance")


def _require(extra: str, *modules: str) -> None:
    """`MissingExtraError` (one line naming the extra) unless every module can be imported."""
    if any(importlib.util.find_spec(module) is None for module in modules):
        raise MissingExtraError(extra, ", ".join(modules))


if __name__ == "__main__":
    sys.exit(main())
