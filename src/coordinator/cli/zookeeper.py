"""The `--zookeeper` and `--broker-id` options of `rebalance serve` (no kazoo import here, so a
plain install without the `zookeeper` extra still runs every other command)."""

from __future__ import annotations

import argparse
import importlib.util
from typing import TYPE_CHECKING

from coordinator.errors import MissingExtraError
from coordinator.zookeeper.connect import parse_zookeeper_connect

if TYPE_CHECKING:
    from coordinator.node.app import Extension


def add_zookeeper_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--zookeeper", type=parse_zookeeper_connect, default=None, metavar="HOST:PORT[/chroot]",
        help="also register this node as a Kafka 0.8 broker in ZooKeeper (/brokers/ids, "
        "/brokers/topics) for ZooKeeper-coordinated consumers",
    )  # fmt: skip
    parser.add_argument(
        "--broker-id", type=int, default=None, metavar="N",
        help="this node's broker id (the same as --set broker.id=N; default 1)",
    )  # fmt: skip


def zookeeper_extensions(args: argparse.Namespace) -> list[Extension]:
    """The broker registration when `--zookeeper` is given (and `--broker-id` as a setting)."""
    if args.broker_id is not None:
        args.settings.append(f"broker.id={args.broker_id}")
    if args.zookeeper is None:
        return []
    if importlib.util.find_spec("kazoo") is None:
        raise MissingExtraError("zookeeper", "kazoo")
    from coordinator.zookeeper.broker import ZooKeeperBrokerRegistration

    return [ZooKeeperBrokerRegistration(args.zookeeper)]


def add_zk_offsets_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("group", metavar="GROUP", help="the consumer group (group.id)")
    parser.add_argument(
        "--zookeeper", type=parse_zookeeper_connect, required=True, metavar="HOST:PORT[/chroot]",
        help="where the group is registered",
    )  # fmt: skip
    parser.add_argument(
        "--topic", default=None, metavar="T1,T2",
        help="comma-separated topics (default: every topic the group owns or has offsets for)",
    )  # fmt: skip


def run_zk_offsets(args: argparse.Namespace) -> int:
    """Print the group's owners, offsets and lag (ConsumerOffsetChecker's table)."""
    import asyncio

    from coordinator.zookeeper.offsets_view import group_offsets, render

    topics = [t for t in args.topic.split(",") if t] if args.topic else None
    print(render(asyncio.run(group_offsets(args.zookeeper, args.group, topics))))
    return 0
