"""The `rebalance` console script."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from coordinator.core_demo import run_core_demo


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rebalance", description="Kafka consumer-group rebalance protocol tools."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="walk a consumer group through its lifecycle, narrated")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return run_core_demo()
    raise AssertionError(f"unhandled command {args.command}")  # argparse rejects others


if __name__ == "__main__":
    sys.exit(main())
