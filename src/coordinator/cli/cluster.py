"""Cluster mode on the command line: `rebalance serve --cluster URL --node-id N` and
`rebalance cluster status --cluster URL`.

    rebalance serve --cluster postgresql://rebalance@db:5432/rebalance --node-id 1 \\
        --bind 0.0.0.0:9092 --advertise node1:9092 --data-dir ./data
    rebalance cluster status --cluster postgresql://rebalance@db:5432/rebalance

Without `--cluster`, `serve` is the single node it always was (SQLite, nothing of PostgreSQL
imported). With it, the group coordinator runs on `coordinator.cluster.serving.ClusterExtension`.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coordinator.command_line import add_debug_argument

if TYPE_CHECKING:
    from coordinator.groups.extension import GroupCoordinatorExtension
    from coordinator.node.app import Extension
    from coordinator.node.config import SettingClaim


def parse_node_id(text: str) -> int:
    """A whole number ≥ 0 (a node id, a count)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, not {text!r}")
    return int(text)


def add_cluster_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster", default=None, metavar="postgresql://USER@HOST:PORT/DB",
        help="run as a node of a cluster whose nodes share the group coordinator through this "
        "PostgreSQL (needs the cluster extra); every node gets its own --node-id",
    )  # fmt: skip
    parser.add_argument(
        "--node-id", type=parse_node_id, default=None, metavar="N",
        help="this node's id (the node.id setting; default 1); unique among a cluster's nodes",
    )  # fmt: skip


def add_cluster_command(commands: argparse._SubParsersAction[Any]) -> None:
    cluster = commands.add_parser(
        "cluster", help="a cluster's nodes, their partitions and epochs (cluster mode)"
    )
    what = cluster.add_subparsers(dest="cluster_command", required=True, metavar="WHAT")
    status = what.add_parser(
        "status", help="nodes (alive or gone), the partitions each holds with their epochs, and "
        "the last ownership changes",
    )  # fmt: skip
    status.add_argument(
        "--cluster", required=True, metavar="postgresql://USER@HOST:PORT/DB",
        help="the cluster's PostgreSQL, as given to rebalance serve --cluster",
    )  # fmt: skip
    status.add_argument(
        "--last", type=parse_node_id, default=10, metavar="N",
        help="how many of the last ownership changes to print (default 10)",
    )  # fmt: skip
    add_debug_argument(status)


def run_cluster(args: argparse.Namespace) -> int:
    from coordinator.cluster.serving import check_url
    from coordinator.cluster.status import format_status, read_status

    print(format_status(read_status(check_url(args.cluster), args.last)))
    return 0


@dataclass
class ServeParts:
    """What `serve` runs: its extensions, the setting claims, the hooks of a graceful stop."""

    extensions: list[Extension]
    claims: list[SettingClaim]
    stopping: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


def serve_parts(args: argparse.Namespace, groups: GroupCoordinatorExtension) -> ServeParts:
    """The group coordinator alone, or (`--cluster`) wrapped in cluster mode."""
    if args.cluster is None:
        return ServeParts([groups], [groups])
    from coordinator.cluster.serving import ClusterExtension
    from coordinator.cluster.topic_catalogue import ClusterTopicsExtension

    topics = ClusterTopicsExtension(args.cluster, lambda: cluster.lease_settings().renew_ms / 1000)
    cluster = ClusterExtension(args.cluster, groups, topics=topics)
    return ServeParts([cluster], [groups, cluster], [cluster.hand_over])
