"""Failures an operator meets and can fix: a port in use, a data dir in use, a corrupt file.

Each is raised with a one-line message saying what failed, where (the path or the address) and
what to do about it. The `rebalance` console script prints that line and exits with the
error's `exit_status` (1: the machine's state is in the way; 2: the command line is wrong),
without a traceback unless asked for one (`--debug`); an embedded server raises the same
exception to its caller. Deriving from `RuntimeError` keeps the older classes that became
operational errors (`StoreError`, `LogCorruptError`) catchable as they were.
"""

from __future__ import annotations

from rebalance.distribution import DISTRIBUTION

RUNTIME_FAILURE = 1
USAGE_ERROR = 2


class OperationalError(RuntimeError):
    """Something on this machine stops the server: the message is one line, cause and remedy."""

    exit_status = RUNTIME_FAILURE


class UsageError(OperationalError):
    """The command line or the settings are wrong (exit status 2)."""

    exit_status = USAGE_ERROR


class MissingExtraError(OperationalError):
    """A command needs an optional dependency group (an "extra") that is not installed."""

    def __init__(self, extra: str, modules: str) -> None:
        super().__init__(f"needs the {extra!r} extra ({modules}): {install_hint(extra)}")
        self.extra = extra


def install_hint(extra: str) -> str:
    """The command that adds an extra to this installation (the distribution's own name: PyPI's
    `rebalance` is another project)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class StoreError(OperationalError):
    """The group store cannot be opened or written; the message names the file (raised by
    `coordinator.groups.store`, mapped to an error code by the node's server)."""


class FencedError(StoreError):
    """A write refused because the writer no longer holds the epoch of its partitions: another
    node took them over (cluster mode). The node resigns those partitions; it does not retry."""

    def __init__(self, partitions: tuple[int, ...], message: str) -> None:
        super().__init__(message)
        self.partitions = partitions


class ClusterError(OperationalError):
    """Cluster mode cannot start or go on: PostgreSQL unreachable or the URL wrong, a schema from
    a newer release, a node id that is live on another node (`coordinator.cluster`)."""
