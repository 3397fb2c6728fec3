"""One consuming group member in its own process, reporting its rebalance callbacks and what
it consumes as JSON lines.

    {"t": monotonic seconds, "event": "assigned"|"revoked"|"lost", "partitions": [[t, p], ...]}
    {"t": ..., "event": "revoking", "partitions": [...]}   (a revocation callback starts)
    {"t": ..., "event": "consumed", "partitions": [...],   (a batch had records of these:
     "offsets": [[t, p, first, last, count], ...]}          the offsets of each, contiguous)
    {"t": ..., "event": "committed", "offsets": [[t, p, offset], ...]}   (on revocation)
    {"t": ..., "event": "closed"}

`--kind group-member` runs our `GroupMember` under an aiokafka consumer (`IncrementalConsumer`);
`--kind confluent` runs librdkafka (confluent-kafka); both incremental: `--protocol classic` is
cooperative-sticky, `--protocol consumer` is KIP-848 (`group.protocol=consumer`, the coordinator
assigns). "assigned" is said before the partitions can be fetched, "revoked" after they no
longer are. Each revocation callback takes `--revoke-ms` (a service draining the work it gives
back), so that a rebalance lasts long enough to see who keeps consuming.
`time.monotonic()` is CLOCK_MONOTONIC, one clock for every process of the machine, so the lines
of several processes can be merged in time order. SIGTERM closes the member cleanly; a test's
SIGKILL leaves it to the session timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any

stop_requested = False


def say(event: str, partitions: Any = None, **fields: Any) -> None:
    line: dict[str, Any] = {"t": time.monotonic(), "event": event, **fields}
    if partitions is not None:
        line["partitions"] = sorted([t, p] for t, p in partitions)
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def run_group_member(args: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer

    from coordinator.clients.member.aiokafka import IncrementalConsumer

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

    class Reporting(IncrementalConsumer):
        """The adapter's callbacks, told on stdout around what they do."""

        async def _on_assigned(self, partitions: Any) -> None:
            say("assigned", partitions)
            await super()._on_assigned(partitions)

        async def _on_revoked(self, partitions: Any) -> None:
            say("revoking", partitions)
            await asyncio.sleep(args.revoke_ms / 1000)
            offsets = sorted([t, p, o] for (t, p), o in self._positions.items()
                             if (t, p) in partitions)  # fmt: skip
            try:
                await super()._on_revoked(partitions)  # commits the positions, then drops
                if offsets:
                    say("committed", offsets=offsets)
            finally:
                say("revoked", partitions)

        async def _on_lost(self, partitions: Any) -> None:
            await super()._on_lost(partitions)
            say("lost", partitions)

    consumer = Reporting(
        AIOKafkaConsumer(bootstrap_servers=args.bootstrap, enable_auto_commit=False),
        args.bootstrap, args.group, [args.topic], group_protocol=args.protocol,
        session_timeout_ms=args.session_ms, rebalance_timeout_ms=args.session_ms * 2,
        heartbeat_interval_ms=None if args.protocol == "consumer" else args.session_ms // 5,
        client_id=args.name,
    )  # fmt: skip
    async with consumer:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=50)
            if batch:
                offsets = [[tp.topic, tp.partition, rs[0].offset, rs[-1].offset, len(rs)]
                           for tp, rs in batch.items()]  # fmt: skip
                say("consumed", [(tp.topic, tp.partition) for tp in batch], offsets=offsets)
    say("closed")


def run_confluent(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    def on_sigterm(*_: object) -> None:
        global stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, on_sigterm)
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if args.protocol == "consumer":
        config["group.protocol"] = "consumer"  # session and heartbeat: the coordinator's
    else:
        config |= {
            "session.timeout.ms": args.session_ms,
            "heartbeat.interval.ms": args.session_ms // 5,
            "max.poll.interval.ms": max(args.session_ms * 2, 10_000),
            "partition.assignment.strategy": "cooperative-sticky",
        }
    consumer = Consumer(config)

    def assigned(_: Any, partitions: Any) -> None:
        say("assigned", [(p.topic, p.partition) for p in partitions])

    positions: dict[tuple[str, int], int] = {}  # the next offset to read, of what it holds

    def revoked(_: Any, partitions: Any) -> None:
        given = [(p.topic, p.partition) for p in partitions]
        say("revoking", given)
        time.sleep(args.revoke_ms / 1000)
        offsets = [TopicPartition(t, p, positions[t, p]) for t, p in given if (t, p) in positions]
        try:
            if offsets:
                consumer.commit(offsets=offsets, asynchronous=False)
                say("committed", offsets=sorted([o.topic, o.partition, o.offset] for o in offsets))
        except KafkaException as exc:
            say("commit_failed", error=str(exc))
        finally:
            for key in given:
                positions.pop(key, None)
            say("revoked", given)

    def lost(_: Any, partitions: Any) -> None:
        for p in partitions:
            positions.pop((p.topic, p.partition), None)
        say("lost", [(p.topic, p.partition) for p in partitions])

    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
    while not stop_requested:
        records = [m for m in consumer.consume(100, timeout=0.05) if m.error() is None]
        ranges: dict[tuple[str, int], list[int]] = {}
        for m in records:
            key = (m.topic(), m.partition())
            ranges.setdefault(key, []).append(m.offset())
            positions[key] = m.offset() + 1
        if ranges:
            offsets = [[t, p, min(os), max(os), len(os)] for (t, p), os in ranges.items()]
            say("consumed", ranges, offsets=offsets)
    consumer.close()
    say("closed")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["group-member", "confluent"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--session-ms", type=int, default=3000)
    parser.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    parser.add_argument("--revoke-ms", type=int, default=0)
    args = parser.parse_args()
    if args.kind == "group-member":
        asyncio.run(run_group_member(args))
    else:
        run_confluent(args)


if __name__ == "__main__":
    main()
