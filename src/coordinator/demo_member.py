"""One demo consumer: a real aiokafka consumer using one of our assignors as its plug-in.

Run by `rebalance demo` as a separate process so that it can be stopped cleanly (SIGTERM: it
commits, leaves the group and exits) or crashed (SIGKILL: the coordinator notices only when its
session times out). It reports on stdout, one JSON object a line:

    {"event": "assigned", "partitions": [p, ...]}
    {"event": "consumed", "count": n}        (running total, at most every half second)
"""

from __future__ import annotations

import argparse
import asyncio
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--assignor", default="sticky")
    parser.add_argument("--session-ms", type=int, default=6000)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
