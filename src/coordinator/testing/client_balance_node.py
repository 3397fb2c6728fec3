"""One client-balance node as a process: join, run the modulo allocation loop, consume.

`python -m coordinator.testing.client_balance_node BOOTSTRAP GROUP TOPIC SOURCE_COUNT NODE_ID
[--session-ms N] [--bootstrap-offset KEY=OFFSET ...]` prints one JSON object a line on stdout:

    {"event": "started", "member": <member id>, "epoch": <member epoch>}
    {"event": "held", "keys": [<partition keys>]}        whenever the registered set changes
    {"event": "consumed", "key": <partition key>, "offset": <int>, "value": <str>}
                                                          for each record, before it is confirmed

and runs until SIGTERM (then shuts down cleanly: releases, leaves) or SIGKILL. The demo and the
process tests run nodes with it, so a node can be killed for real.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys

from coordinator.clients.client_balance.allocation import allocate
from coordinator.clients.client_balance.config import ClientBalanceConfig
from coordinator.clients.client_balance.consumer import ClientBalanceConsumer
from coordinator.clients.client_balance.errors import ClientBalanceError, ClientCode


def say(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def run(args: argparse.Namespace) -> None:
    config = ClientBalanceConfig(
        args.bootstrap,
        args.group,
        client_id=f"node-{args.node_id}",
        session_timeout_ms=args.session_ms,
        register_retries=args.register_retries,
        occupied_retry_backoff_ms=args.retry_ms,
    )
    offsets = dict(item.split("=", 1) for item in args.bootstrap_offset)
    consumer = ClientBalanceConsumer(config)
    await consumer.start([args.topic], args.source_count, args.node_id)
    say(event="started", member=consumer.consumer_id, epoch=consumer.member_epoch)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    allocation = asyncio.create_task(
        allocate(
            consumer,
            interval_ms=args.allocate_ms,
            bootstrap_offset=lambda key: int(offsets.get(key, -1)),
        )
    )
    consuming = asyncio.create_task(consume(consumer))
    await stop.wait()
    allocation.cancel()
    consuming.cancel()
    for task in (allocation, consuming):
        with contextlib.suppress(asyncio.CancelledError, ClientBalanceError):
            await task
    await consumer.shutdown()
    say(event="stopped")


async def consume(consumer: ClientBalanceConsumer) -> None:
    held: set[str] = set()
    while True:
        if consumer.registered() != held:
            held = consumer.registered()
            say(event="held", keys=sorted(held))
        try:
            result = await consumer.get_message(max_wait_ms=200)
        except ClientBalanceError as exc:
            if exc.code == ClientCode.CLIENT_SHUTDOWN:
                return
            continue
        # Delivered, then confirmed (committed): a node killed in between has its batch
        # delivered again by the partition's next holder: at least once, nothing lost.
        for message in result.messages:
            value = (message.value or b"").decode()
            say(event="consumed", key=result.partition_key, offset=message.offset, value=value)
        with contextlib.suppress(ClientBalanceError):  # lost meanwhile: its next holder has it
            await consumer.confirm(result.confirm_context, True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="client-balance-node")
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("source_count", type=int)
    parser.add_argument("node_id", type=int)
    parser.add_argument("--session-ms", type=int, default=30_000)
    parser.add_argument("--allocate-ms", type=int, default=300)
    parser.add_argument("--retry-ms", type=int, default=500)
    parser.add_argument("--register-retries", type=int, default=20)
    parser.add_argument("--bootstrap-offset", action="append", default=[], metavar="KEY=OFFSET")
    asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
