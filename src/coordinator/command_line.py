"""How the `rebalance` commands fail: one line on stderr and an exit status, never a traceback.

A wrong command line (an unknown option, a bad `--bind`, an illegal topic name, an unknown
setting) exits with status 2; a failure of the machine's state (a port or data dir in use, a
file that cannot be read, a missing extra) with status 1 and the `OperationalError`'s message,
which says what failed, where, and what to do. Anything else is a bug: its type and message are
printed on one line, with the hint to add `--debug` (or `-v`), which prints the traceback too.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

from coordinator.errors import RUNTIME_FAILURE, USAGE_ERROR, OperationalError

INTERRUPTED = 130  # what a shell reports for a command ended by SIGINT


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (argparse prints the usage before them)."""

    def error(self, message: str) -> NoReturn:
        sys.exit(usage_error(self.prog, message))


def usage_error(prog: str, message: str) -> int:
    """Say what is wrong with the command line, in one line; the exit status for it."""
    print(f"{prog}: error: {message} (see {prog} --help)", file=sys.stderr)
    return USAGE_ERROR


def add_debug_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--debug", "-v", action="store_true",
        help="on a failure, print its traceback too (-v is short for --debug; it does not make "
        "the output verbose)",
    )  # fmt: skip


def run_command(prog: str, debug: bool, command: Callable[[], int]) -> int:
    """Run `command`, turning failures into one stderr line and an exit status."""
    try:
        return command()
    except OperationalError as exc:
        if debug:
            traceback.print_exc()
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.exit_status
    except Exception as exc:
        if debug:
            traceback.print_exc()
            hint = ""
        else:
            hint = " (run with --debug for the traceback)"
        message = " ".join(str(exc).split())
        print(f"{prog}: unexpected error: {type(exc).__name__}: {message}{hint}", file=sys.stderr)
        return RUNTIME_FAILURE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return INTERRUPTED
