"""One ZooKeeper-coordinated consumer in a process of its own (tests, demo, benchmark).

    python -m coordinator.zookeeper.member --zookeeper 127.0.0.1:2181 --group g --topic orders

SIGTERM stops it cleanly (commit, close the session: its znodes go at once); SIGKILL leaves its
znodes until ZooKeeper expires the session. It reports on stdout, one JSON object a line:

    {"event": "started", "consumer": "<consumer id>"}
    {"event": "assigned", "partitions": [[topic, p], ...], "attempts": n, "consumers": [ids]}
    {"event": "rebalance_failed", "attempts": n}                            ConsumerRebalanceFailed
    {"event": "consumed", "count": n}          running total (with --report-records, "records":
                                               [[topic, p, offset, value], ...] of the batch)
    {"event": "stopped"}
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from coordinator.zookeeper.consumer import (
    ConsumerRebalanceFailed,
    RebalanceOutcome,
    ZooKeeperConsumer,
)
from rebalance.zookeeper.config import ZooKeeperConsumerConfig
from rebalance.zookeeper.topic_filter import TopicFilter


def say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def dump_stacks() -> None:
    """SIGUSR1: every thread's and every task's stack to stderr (what is a member waiting on)."""
    faulthandler.dump_traceback(all_threads=True)
    for task in asyncio.all_tasks():
        task.print_stack(file=sys.stderr)


def report(outcome: RebalanceOutcome) -> None:
    if outcome.succeeded:
        say(event="assigned", partitions=sorted(outcome.assignment), attempts=outcome.attempts,
            consumers=outcome.consumers)  # fmt: skip
    else:
        say(event="rebalance_failed", attempts=outcome.attempts)


def parse_topic(text: str) -> tuple[str, int]:
    name, _, streams = text.partition(":")
    return name, int(streams or 1)


async def run(args: argparse.Namespace) -> int:
    properties = {
        "group.id": args.group,
        "zookeeper.connect": args.zookeeper,
        "zookeeper.session.timeout.ms": str(args.session_ms),
        "rebalance.backoff.ms": str(args.backoff_ms),
        "rebalance.max.retries": str(args.retries),
        "auto.commit.interval.ms": str(args.commit_interval_ms),
        "auto.offset.reset": args.offset_reset,
        "partition.assignment.strategy": args.strategy,
    }
    if args.name:
        properties["consumer.id"] = args.name
    config = ZooKeeperConsumerConfig.from_properties(properties)
    subscription: dict[str, int] | TopicFilter
    if args.whitelist or args.blacklist:
        subscription = TopicFilter(args.whitelist or args.blacklist,
                                   "white_list" if args.whitelist else "black_list")  # fmt: skip
    else:
        subscription = dict(parse_topic(t) for t in args.topic)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, dump_stacks)
    consumer = ZooKeeperConsumer(
        config, subscription, streams=args.streams, event_log=args.event_log, on_rebalance=report
    )
    say(event="started", consumer=consumer.consumer_id)
    try:
        await consumer.start()
    except ConsumerRebalanceFailed:
        return 3
    consumed = 0
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=200)
            if not batch:
                continue
            consumed += sum(len(records) for records in batch.values())
            fields: dict[str, Any] = {"count": consumed}
            if args.report_records:
                fields["records"] = [
                    [tp[0], tp[1], r.offset, (r.value or b"").decode(errors="replace")]
                    for tp, records in sorted(batch.items())
                    for r in records
                ]
            say(event="consumed", **fields)
    finally:
        await consumer.stop()
        say(event="stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", action="append", default=[], metavar="NAME[:STREAMS]")
    parser.add_argument("--whitelist", default=None)
    parser.add_argument("--blacklist", default=None)
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--name", default=None, help="consumer.id (default: generated)")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--backoff-ms", type=int, default=2000)
    parser.add_argument("--retries", type=int, default=4)
    parser.add_argument("--commit-interval-ms", type=int, default=60000)
    parser.add_argument("--offset-reset", default="smallest", choices=["smallest", "largest"])
    parser.add_argument("--strategy", default="range", choices=["range", "roundrobin"])
    parser.add_argument("--event-log", type=Path, default=None)
    parser.add_argument("--report-records", action="store_true")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING"])
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )  # fmt: skip
    logging.getLogger("kazoo").setLevel(max(logging.WARNING, logging.getLogger().level))
    if not args.topic and not (args.whitelist or args.blacklist):
        parser.error("give --topic, --whitelist or --blacklist")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
