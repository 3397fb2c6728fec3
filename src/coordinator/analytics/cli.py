"""Entry points that the `rebalance` console script wires in (`report`, `sweep`).

Each pair is `add_*_arguments(parser)` to declare the options and `run_*(args) -> int` to run;
bad input (missing input path, unwritable output, bad master URL or `--conf`) ends with a
message on stderr and exit status 2, before Spark starts where it can be checked early.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from coordinator.analytics.load import InputError, resolve_input
from coordinator.analytics.report_html import counted
from coordinator.analytics.session import (
    MasterURLError,
    SparkConfError,
    check_master,
    parse_conf,
)
from coordinator.analytics.sweep import DEFAULT_ASSIGNORS, PEER_MAX_PARTITIONS
from coordinator.command_line import OneLineParser

USAGE_ERROR = 2


def _add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """`--master` and `--conf`, shared by every Spark command."""
    parser.add_argument("--master", default="local[*]", help="Spark master URL (local[*])")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="spark.KEY=VALUE",
        help="a Spark setting, as spark-submit's --conf (repeatable), e.g. "
        "spark.executor.memory=4g",
    )


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `rebalance report EVENTS --out DIR [--master URL] [--partitions]
    [--group GROUP]... [--self-contained]`."""
    parser.add_argument("events", help="event log: a .jsonl file, a directory, a glob or Parquet")
    parser.add_argument("--out", required=True, help="output directory (local or a Spark URI)")
    _add_spark_arguments(parser)
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=None,
        help="where index.html and the plots go (default: --out, which must then be local)",
    )
    parser.add_argument(
        "--partitions",
        action="store_true",
        help="on each group page, which member held each partition when",
    )
    parser.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="GROUP",
        help="also draw this group's page and ownership, besides the busiest (repeatable)",
    )
    parser.add_argument(
        "--self-contained",
        action="store_true",
        help="one index.html with the group pages and every image inside it",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="print nothing but errors (no progress, no summary)"
    )


def _is_remote(path: str) -> bool:
    scheme = urlparse(path).scheme
    return len(scheme) > 1 and scheme != "file"


def _writable_dir(path: Path) -> Path:
    """Create the directory if needed and prove it can be written to."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create output directory {str(path)!r}: {error}") from error
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"output directory {str(path)!r} is not writable")
    return path


def run_report(args: argparse.Namespace) -> int:
    """Run the report job; returns the process exit status."""
    out: str = args.out
    try:
        check_master(args.master)
        conf = parse_conf(args.conf)
        resolve_input(args.events)
        report_dir: Path | None = args.report_dir
        if not _is_remote(out):
            local_out = Path(urlparse(out).path if out.startswith("file:") else out)
            _writable_dir(local_out)
            out = str(local_out.resolve())
            report_dir = report_dir or local_out
        elif report_dir is None:
            raise InputError("--out is not a local directory: give --report-dir for the HTML")
        report_dir = _writable_dir(report_dir)
    except (InputError, MasterURLError, SparkConfError) as error:
        print(f"rebalance report: {error}", file=sys.stderr)
        return USAGE_ERROR

    from coordinator.analytics.pipeline import run_pipeline
    from coordinator.analytics.session import build_session

    spark = build_session(args.master, conf=conf, jvm_output=_jvm_output(args.quiet))
    try:
        counts = run_pipeline(
            spark, args.events, out, report_dir, show_progress=not args.quiet,
            partitions=args.partitions, self_contained=args.self_contained, groups=args.group,
        )  # fmt: skip
    except InputError as error:  # a Parquet input without the event columns
        print(f"rebalance report: {error}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        spark.stop()
    if not args.quiet:
        print(
            f"{counted(counts.lines, 'line')}: {counted(counts.events, 'event')}, "
            f"{counts.quarantined:,} quarantined; "
            f"tables in {out}, report {report_dir / 'index.html'}"
        )
    return 0


def _int_list(text: str) -> list[int]:
    """Comma-separated non-negative integers, e.g. `10,100`; argparse reports a bad one."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"not a list of non-negative integers: {text!r}")
    return values


def _kinds(text: str) -> list[str]:
    kinds = text.split(",")
    if not set(kinds) <= {"equal", "mixed"}:
        raise argparse.ArgumentTypeError(f"subscriptions must be equal and/or mixed: {text!r}")
    return kinds


def _count(text: str) -> int:
    """A non-negative integer (churn steps, a partition cap)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a non-negative integer: {text!r}")
    return value


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `rebalance sweep --out DIR [--master URL] [grid options]`."""
    parser.add_argument("--out", required=True, help="output directory (local)")
    _add_spark_arguments(parser)
    parser.add_argument("--members", type=_int_list, default=[10, 100], help="(10,100)")
    parser.add_argument("--topics", type=_int_list, default=[1, 10], help="(1,10)")
    parser.add_argument(
        "--partitions-per-topic", type=_int_list, default=[10, 100], help="(10,100)"
    )
    parser.add_argument(
        "--subscriptions",
        type=_kinds,
        default=["equal", "mixed"],
        help="equal: every member on every topic; mixed: random subsets (equal,mixed)",
    )
    parser.add_argument(
        "--racks",
        type=_int_list,
        default=[0, 3],
        help="racks per scenario, 0 for none; each count is a separate summary row (0,3)",
    )
    parser.add_argument("--churn", type=_count, default=4, help="join/leave steps after the first")
    parser.add_argument(
        "--assignors",
        default=",".join(DEFAULT_ASSIGNORS),
        help=f"registered assignor names ({','.join(DEFAULT_ASSIGNORS)})",
    )
    parser.add_argument("--seed", type=int, default=1, help="builds every group (1)")
    parser.add_argument(
        "--no-peers", action="store_true", help="do not run kafka-python's assignors beside ours"
    )
    parser.add_argument(
        "--peer-max-partitions",
        type=_count,
        default=PEER_MAX_PARTITIONS,
        help="skip kafka-python's sticky assignors above this many partitions "
        f"(topics x partitions per topic; {PEER_MAX_PARTITIONS})",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _assignor_names(text: str) -> list[str]:
    """The `--assignors` list, each name checked against the registry (before Spark starts)."""
    import assignors

    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise InputError("--assignors is empty")
    for name in names:
        try:
            assignors.get(name)
        except assignors.UnknownAssignorError as error:
            raise InputError(str(error.args[0])) from None
    return names


def run_sweep(args: argparse.Namespace) -> int:
    """Run the sweep: Parquet `OUT/sweep` and `OUT/sweep_summary`, plot `OUT/sweep.png`."""
    try:
        check_master(args.master)
        conf = parse_conf(args.conf)
        names = _assignor_names(args.assignors)
        out = _writable_dir(Path(args.out)).resolve()
    except (InputError, MasterURLError, SparkConfError) as error:
        print(f"rebalance sweep: {error}", file=sys.stderr)
        return USAGE_ERROR
    from coordinator.analytics.session import build_session
    from coordinator.analytics.sweep_job import run_sweep_job
    from coordinator.analytics.sweep_summary import format_table

    scenarios = [
        (m, t, p, kind, racks, args.seed)
        for m in args.members
        for t in args.topics
        for p in args.partitions_per_topic
        for kind in args.subscriptions
        for racks in args.racks
    ]
    spark = build_session(
        args.master, app_name="rebalance-sweep", conf=conf, jvm_output=_jvm_output(args.quiet)
    )
    try:
        outputs = run_sweep_job(
            spark, scenarios, names, out, churn=args.churn, peers=not args.no_peers,
            peer_max_partitions=args.peer_max_partitions, progress=not args.quiet,
        )  # fmt: skip
    finally:
        spark.stop()
    for note in outputs.notes:  # never silent: peers skipped, assignors that raised
        print(f"rebalance sweep: note: {note}", file=sys.stderr)
    print(format_table(outputs.summary))
    print(
        f"{len(scenarios)} scenarios, {outputs.rows} rows in {outputs.sweep_dir}; "
        f"summary in {outputs.summary_dir}; plot {outputs.plot}"
    )
    return 0


def _jvm_output(quiet: bool) -> Path | None:
    """With `--quiet`, where the Spark JVM's own output goes (shown only if it fails to start)."""
    if not quiet:
        return None
    return Path(tempfile.gettempdir()) / f"rebalance-spark-{os.getpid()}.log"


def build_parser(prog: str = "python -m coordinator.analytics") -> argparse.ArgumentParser:
    """The parser of `report` and `sweep` (the `rebalance` script hands them over to it)."""
    parser = OneLineParser(prog=prog)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_report_arguments(commands.add_parser("report", help="explain rebalances from a log"))
    add_sweep_arguments(commands.add_parser("sweep", help="compare assignors over a grid"))
    return parser


def main(argv: list[str] | None = None, prog: str = "python -m coordinator.analytics") -> int:
    args = build_parser(prog).parse_args(argv)
    if args.command == "report":
        return run_report(args)
    if args.command == "sweep":
        return run_sweep(args)
    raise AssertionError(f"unhandled command {args.command}")  # argparse rejects others
