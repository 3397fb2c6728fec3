"""One demo consumer: a real aiokafka consumer using one of our assignors as its plug-in,
(`--protocol consumer`) a librdkafka consumer with `group.protocol=consumer` (KIP-848: the
coordinator assigns, the client takes and gives back partitions one callback at a time), or
(`--protocol cooperative`) an aiokafka consumer fetching what this package's `GroupMember` owns
(`IncrementalConsumer`: KIP-429 cooperative-sticky, only the partitions that move are revoked).

Run by `rebalance demo` as a separate process so that it can be stopped cleanly (SIGTERM: it
commits, leaves the group and exits) or crashed (SIGKILL: the coordinator notices only when its
session times out). It reports on stdout, one JSON object a line:

    {"event": "assigned", "partitions": [p, ...], "member_id": id}   (all it owns now)
    {"event": "consumed", "count": n}        (running total, at most every half second)
    {"event": "revoked", "partitions": [p, ...]}   (cooperative: what it gave back, each time)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from typing import Any


def say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def run(args: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

    from assignors.aiokafka import assignor

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.name,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.session_ms // 6,
        partition_assignment_strategy=(assignor(args.assignor),),
    )

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            return None

        async def on_partitions_assigned(self, assigned: Any) -> None:
            generation, member_id = (
                consumer._coordinator.generation,
                consumer._coordinator.member_id,
            )
            say(
                event="assigned",
                generation=generation,
                member_id=member_id,
                partitions=sorted(tp.partition for tp in assigned),
            )

    consumer.subscribe([args.topic], listener=Listener())
    await consumer.start()
    consumed = 0
    reported = time.monotonic()
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=200)
            consumed += sum(len(messages) for messages in batch.values())
            if time.monotonic() - reported > 0.5:
                say(event="consumed", count=consumed)
                reported = time.monotonic()
    finally:
        await consumer.stop()


def run_consumer_protocol(args: argparse.Namespace) -> None:
    """librdkafka's KIP-848 consumer. Its callbacks are incremental (what it gains, what it
    gives back), so the whole ownership is kept here; the session is the coordinator's
    (`group.consumer.session.timeout.ms`), not a client setting."""
    from confluent_kafka import Consumer

    stopping = False

    def on_sigterm(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_sigterm)
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.protocol": "consumer",
            "client.id": args.name,
            "auto.offset.reset": "earliest",
            "auto.commit.interval.ms": 500,
        }
    )
    owned: set[int] = set()

    def report(*_: Any) -> None:
        say(event="assigned", partitions=sorted(owned), member_id=consumer.memberid())

    def on_assign(_: Any, partitions: Any) -> None:
        owned.update(p.partition for p in partitions)
        report()

    def on_revoke(_: Any, partitions: Any) -> None:
        owned.difference_update(p.partition for p in partitions)
        report()

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    consumed = 0
    reported = time.monotonic()
    try:
        while not stopping:
            consumed += sum(m.error() is None for m in consumer.consume(100, timeout=0.2))
            if time.monotonic() - reported > 0.5:
                say(event="consumed", count=consumed)
                reported = time.monotonic()
    finally:
        consumer.close()  # commits, then a heartbeat with member epoch -1: a clean leave


async def run_cooperative(args: argparse.Namespace) -> None:
    """`IncrementalConsumer`: the group membership is a `GroupMember` (cooperative-sticky), the
    aiokafka consumer has no group and fetches what the member owns. Positions are committed
    every half second (aiokafka's auto-commit does that for its own groups) and on each
    revocation, so a SIGKILLed member leaves at most half a second of records to be read again."""
    from aiokafka import AIOKafkaConsumer

    from coordinator.clients.member import CommitError
    from coordinator.clients.member.aiokafka import IncrementalConsumer
    from rebalance.member import Revoked

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    aiokafka_consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, client_id=args.name)
    consumer = IncrementalConsumer(
        aiokafka_consumer, args.bootstrap, args.group, [args.topic],
        assignors=("cooperative-sticky",), client_id=args.name,
        session_timeout_ms=args.session_ms, heartbeat_interval_ms=args.session_ms // 6,
    )  # fmt: skip

    async def follow() -> None:
        """Report each change once the adapter's own callback (which moves aiokafka's
        assignment and commits what is revoked) has run: `changes()` yields it then."""
        async for change in consumer.member.changes():
            if isinstance(change, Revoked):
                say(event="revoked", partitions=sorted(p for _, p in change.partitions))
            say(
                event="assigned",
                generation=consumer.member.generation,
                member_id=consumer.member.member_id,
                partitions=sorted(p for _, p in consumer.owned()),
            )

    reporter = asyncio.create_task(follow())
    await asyncio.sleep(0)  # subscribed before the member starts
    consumed = 0
    reported = committed = time.monotonic()
    async with consumer:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=200)
            consumed += sum(len(records) for records in batch.values())
            if time.monotonic() - committed > 0.5:
                with contextlib.suppress(
                    CommitError
                ):  # mid-rebalance or lost: the next one will do
                    await consumer.commit()
                committed = time.monotonic()
            if time.monotonic() - reported > 0.5:
                say(event="consumed", count=consumed)
                reported = time.monotonic()
        say(event="consumed", count=consumed)
    # Leaving revoked everything (the adapter committed it first); the member has stopped.
    await reporter  # the member has stopped: its last change (all revoked) is reported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--assignor", default="sticky")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument(
        "--protocol", choices=["classic", "consumer", "cooperative"], default="classic"
    )
    args = parser.parse_args()
    if args.protocol == "consumer":
        run_consumer_protocol(args)
    elif args.protocol == "cooperative":
        asyncio.run(run_cooperative(args))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
