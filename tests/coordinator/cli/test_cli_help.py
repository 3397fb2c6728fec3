"""`--help` describes every option and argument of every `rebalance` command."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from coordinator.analytics.cli import build_parser as build_analytics_parser
from coordinator.cli.main import build_parser


def undescribed(parser: argparse.ArgumentParser, path: str) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from undescribed(sub, f"{path} {name}")
        elif not action.help:
            yield f"{path}: {'/'.join(action.option_strings) or action.metavar or action.dest}"


def test_every_option_and_argument_has_a_description() -> None:
    missing = [
        *undescribed(build_parser(), "rebalance"),
        *undescribed(build_analytics_parser("rebalance"), "rebalance"),
    ]
    assert missing == []


def test_debug_says_what_v_means() -> None:
    serve = build_parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    (debug,) = [a for a in serve._actions if "-v" in a.option_strings]
    assert debug.help is not None and "-v is short for --debug" in debug.help
