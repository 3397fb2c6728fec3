"""One member of the cluster demo's groups, committing its position over and over while the
coordinator moves between nodes: an unmodified aiokafka consumer (`--client aiokafka`, eager
rebalancing) or this package's `GroupMember` (`--client member`, cooperative-sticky), both in
classic groups (a KIP-848 group is not in the demo yet).

Every `--interval-ms` it commits one offset for each partition it owns: the milliseconds since
`--origin` (a `time.monotonic()` of the demo, the same clock in every process on the machine),
so offsets only grow, whichever member commits them. It reports on stdout, one JSON object a
line:

    {"event": "assigned", "partitions": [p, ...], "generation": g, "member_id": id}
    {"event": "acked", "offsets": {"p": offset, ...}, "generation": g, "at": t, "coordinator": c}

`acked` follows each commit the coordinator acknowledged; `at` is the monotonic time of the
acknowledgement, `coordinator` the node id (aiokafka) or "host:port" (GroupMember) it came from.
`generation` is the group's generation the member is in. SIGTERM: it stops
committing, leaves the group and exits.
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

Acked = dict[int, int]


def say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def offset_now(origin: float) -> int:
    return int((time.monotonic() - origin) * 1000)


async def run_aiokafka(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(
        args.topic, bootstrap_servers=args.bootstrap.split(","), group_id=args.group,
        client_id=args.name, enable_auto_commit=False, session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.session_ms // 10, request_timeout_ms=args.request_timeout_ms,
        metadata_max_age_ms=1000, retry_backoff_ms=100,
    )  # fmt: skip
    await consumer.start()
    try:
        while not consumer.assignment() and not stop.is_set():
            await consumer.getmany(timeout_ms=200)
        reported: tuple[int, list[int]] | None = None
        while not stop.is_set():
            coordinator = consumer._coordinator  # aiokafka's group coordinator client
            owned: list[TopicPartition] = sorted(consumer.assignment())
            generation = int(coordinator.generation)
            if owned and (generation, [tp.partition for tp in owned]) != reported:
                reported = (generation, [tp.partition for tp in owned])
                say(event="assigned", partitions=reported[1], generation=generation,
                    member_id=coordinator.member_id)  # fmt: skip
            offset = offset_now(args.origin)
            try:
                if owned:
                    await asyncio.wait_for(
                        consumer.commit({tp: offset for tp in owned}), args.request_timeout_ms / 500
                    )
                    say(event="acked", offsets={tp.partition: offset for tp in owned},
                        generation=generation, at=time.monotonic(),
                        coordinator=coordinator.coordinator_id)  # fmt: skip
            except (KafkaError, TimeoutError):
                pass  # the coordinator moved or the group rebalances: the next round retries
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), args.interval_ms / 1000)
    finally:
        with contextlib.suppress(TimeoutError, KafkaError):  # a LeaveGroup to a node just lost
            await asyncio.wait_for(consumer.stop(), 10)


async def run_group_member(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from coordinator.clients.member import GroupMember, MemberError

    member = GroupMember(
        args.bootstrap, args.group, [args.topic], group_protocol="classic",
        session_timeout_ms=args.session_ms, request_timeout_ms=args.request_timeout_ms,
        client_id=args.name,
    )  # fmt: skip
    member.start()
    try:
        reported: tuple[int, list[int]] | None = None
        while not stop.is_set():
            owned = sorted(member.owned())
            generation = member.generation
            if owned and (generation, [p for _, p in owned]) != reported:
                reported = (generation, [p for _, p in owned])
                say(event="assigned", partitions=reported[1], generation=generation,
                    member_id=member.member_id)  # fmt: skip
            offset = offset_now(args.origin)
            try:
                if owned:
                    await member.commit({tp: offset for tp in owned})
                    address = member.member.coordinator
                    node = None if address is None else f"{address[0]}:{address[1]}"
                    say(event="acked", offsets={p: offset for _, p in owned},
                        generation=generation, at=time.monotonic(), coordinator=node)  # fmt: skip
            except MemberError:
                pass  # moving, rejoining or no longer owned: the next round retries
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), args.interval_ms / 1000)
    finally:
        await member.close(10)


async def main_async(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    run = run_aiokafka if args.client == "aiokafka" else run_group_member
    await run(args, stop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True, help="HOST:PORT[,HOST:PORT...]")
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--client", choices=["aiokafka", "member"], default="aiokafka")
    parser.add_argument("--origin", type=float, required=True, help="time.monotonic() of 0 ms")
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--session-ms", type=int, default=30_000)
    parser.add_argument("--request-timeout-ms", type=int, default=4000)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
