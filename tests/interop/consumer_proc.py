"""A real Kafka consumer in its own process, for interop tests.

Runs one unmodified client library (aiokafka, kafka-python or confluent-kafka) as a member of a
consumer group and reports what happens as JSON lines on stdout:

    {"event": "assigned", "partitions": [[topic, partition], ...]}   after every rebalance
    {"event": "revoked", "partitions": [[topic, partition], ...]}    eager revocations
    {"event": "record", "topic": t, "partition": p, "offset": o, "value": v}
    {"event": "committed", "offsets": [[topic, partition, next offset], ...]}
    {"event": "closed"}

Every line carries "at", the wall-clock time it was written (the processes share one clock, so
a test can order the lines of several members). It commits synchronously after every non-empty
batch. SIGTERM closes the consumer cleanly (a dynamic member sends LeaveGroup); SIGKILL, sent
by a test, leaves it to the session timeout.
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


def say(**fields: Any) -> None:
    sys.stdout.write(json.dumps({**fields, "at": time.time()}) + "\n")
    sys.stdout.flush()


def on_sigterm(*_: object) -> None:
    global stop_requested
    stop_requested = True


def run_kafka_python(args: argparse.Namespace) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    strategies = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    options: dict[str, Any] = {}
    if args.instance_id:
        options["group_instance_id"] = args.instance_id
    if args.metadata_max_age_ms:
        options["metadata_max_age_ms"] = args.metadata_max_age_ms
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        partition_assignment_strategy=[strategies[s] for s in args.strategy],
        **options,
    )

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            say(event="revoked", partitions=sorted([tp.topic, tp.partition] for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            say(event="assigned", partitions=sorted([tp.topic, tp.partition] for tp in assigned))

    consumer.subscribe(args.topic.split(","), listener=Listener())
    while not stop_requested:
        # Long polls on purpose: kafka-python 3.0.12 loses a rebalance whose JoinGroup/SyncGroup
        # round trip is still in flight when poll's timer runs out, if this member is the leader
        # and the rebalance was started by a metadata change (partitions added): the leader's
        # assignment already matches the new metadata, so the next poll finds nothing to rejoin
        # and never applies the finished round (no assignment callback, heartbeats left
        # disabled until the session expires). The chance is the round trip's share of the poll
        # timeout; 1 s instead of 200 ms makes it five times smaller, and
        # `resume_abandoned_rebalance` finishes such a round when it happens all the same.
        batch = consumer.poll(timeout_ms=1000)
        resume_abandoned_rebalance(consumer)
        offsets = {}
        for tp, messages in batch.items():
            for m in messages:
                say(
                    event="record",
                    topic=m.topic,
                    partition=m.partition,
                    offset=m.offset,
                    value=m.value.decode(),
                )
            offsets[TopicPartition(tp.topic, tp.partition)] = messages[-1].offset + 1
        if offsets:
            consumer.commit()
            say(
                event="committed",
                offsets=sorted([t.topic, t.partition, o] for t, o in offsets.items()),
            )
    consumer.close()
    say(event="closed")


def resume_abandoned_rebalance(consumer: Any) -> None:
    """Finish a rebalance kafka-python 3.0.12 (the latest release) abandoned (see the poll).

    The round is driven by `BaseCoordinator.join_group_async`, in a loop ``while
    self.need_rejoin()`` that a poll enters only if `need_rejoin()`; a poll whose timer runs out
    leaves the JoinGroup/SyncGroup task to the next one. A leader's rebalance started by a
    metadata change stops needing a rejoin as soon as the leader has assigned the new
    metadata, so no later poll awaits the task: the client is left "rejoining" (its
    `rejoining` flag, set when a round starts and cleared when it completes) with no rejoin
    needed. That state is the bug's and nothing else's; asking for a rejoin then makes the next
    poll await the round in flight (or, if it is done, join again), as the client's own loop
    would have. Reaches the coordinator through a private attribute and calls its
    `request_rejoin`; what it sends on the wire is the client's own JoinGroup/SyncGroup."""
    coordinator = consumer._coordinator
    if coordinator.rejoining and not coordinator.need_rejoin():
        print("consumer_proc: kafka-python abandoned its rebalance; rejoining", file=sys.stderr)
        coordinator.request_rejoin()


async def run_aiokafka(args: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    strategies = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    options: dict[str, Any] = {}
    if args.instance_id:
        options["group_instance_id"] = args.instance_id
    if args.metadata_max_age_ms:
        options["metadata_max_age_ms"] = args.metadata_max_age_ms
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        partition_assignment_strategy=tuple(strategies[s] for s in args.strategy),
        **options,
    )

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            say(event="revoked", partitions=sorted([tp.topic, tp.partition] for tp in revoked))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            say(event="assigned", partitions=sorted([tp.topic, tp.partition] for tp in assigned))

    consumer.subscribe(args.topic.split(","), listener=Listener())
    await consumer.start()
    try:
        while not stop_requested:
            batch = await consumer.getmany(timeout_ms=200)
            offsets = {}
            for tp, messages in batch.items():
                for m in messages:
                    say(
                        event="record",
                        topic=m.topic,
                        partition=m.partition,
                        offset=m.offset,
                        value=m.value.decode(),
                    )
                offsets[tp] = messages[-1].offset + 1
            if offsets:
                await consumer.commit()
                say(
                    event="committed",
                    offsets=sorted([t.topic, t.partition, o] for t, o in offsets.items()),
                )
    finally:
        await consumer.stop()
    say(event="closed")


def run_confluent(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer

    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.client_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": args.session_ms,
        "heartbeat.interval.ms": args.heartbeat_ms,
        "partition.assignment.strategy": ",".join(args.strategy),
        "topic.metadata.refresh.interval.ms": args.metadata_max_age_ms or 1000,
    }
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)
    owned: set[tuple[str, int]] = set()

    def cooperative() -> bool:
        return args.strategy == ["cooperative-sticky"]

    def on_assign(_: Any, partitions: Any) -> None:
        # Cooperative (KIP-429): the callbacks carry only what is added or taken away.
        if not cooperative():
            owned.clear()
        owned.update((p.topic, p.partition) for p in partitions)
        say(event="assigned", partitions=sorted([t, p] for t, p in owned))

    def on_revoke(_: Any, partitions: Any) -> None:
        revoked = {(p.topic, p.partition) for p in partitions}
        owned.difference_update(revoked)
        if cooperative():
            say(event="assigned", partitions=sorted([t, p] for t, p in owned))
        else:
            say(event="revoked", partitions=sorted([t, p] for t, p in revoked))

    consumer.subscribe(args.topic.split(","), on_assign=on_assign, on_revoke=on_revoke)
    while not stop_requested:
        messages = consumer.consume(num_messages=100, timeout=0.2)
        offsets: dict[tuple[str, int], int] = {}
        for m in messages:
            if m.error() is not None:
                continue
            say(
                event="record",
                topic=m.topic(),
                partition=m.partition(),
                offset=m.offset(),
                value=m.value().decode(),
            )
            offsets[(m.topic(), m.partition())] = m.offset() + 1
        if offsets:
            consumer.commit(asynchronous=False)
            say(event="committed", offsets=sorted([t, p, o] for (t, p), o in offsets.items()))
    consumer.close()
    say(event="closed")


def run_confluent_consumer_protocol(args: argparse.Namespace) -> None:
    """librdkafka with `group.protocol=consumer` (KIP-848): the coordinator assigns; the
    callbacks are incremental, so the full assignment is tracked here."""
    from confluent_kafka import Consumer

    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "group.protocol": "consumer",
        "client.id": args.client_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": args.metadata_max_age_ms or 1000,
    }
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)
    owned: set[tuple[str, int]] = set()

    def on_assign(_: Any, partitions: Any) -> None:
        owned.update((p.topic, p.partition) for p in partitions)
        say(event="assigned", partitions=sorted([t, p] for t, p in owned))

    def on_revoke(_: Any, partitions: Any) -> None:
        owned.difference_update((p.topic, p.partition) for p in partitions)
        say(event="assigned", partitions=sorted([t, p] for t, p in owned))

    consumer.subscribe(
        args.topic.split(","), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke
    )
    while not stop_requested:
        messages = consumer.consume(num_messages=100, timeout=0.2)
        offsets: dict[tuple[str, int], int] = {}
        for m in messages:
            if m.error() is not None:
                continue
            say(
                event="record",
                topic=m.topic(),
                partition=m.partition(),
                offset=m.offset(),
                value=m.value().decode(),
            )
            offsets[(m.topic(), m.partition())] = m.offset() + 1
        if offsets:
            consumer.commit(asynchronous=False)
            say(event="committed", offsets=sorted([t, p, o] for (t, p), o in offsets.items()))
    consumer.close()
    say(event="closed")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--lib",
        choices=["aiokafka", "kafka-python", "confluent", "confluent-consumer"],
        required=True,
    )
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True, help="a topic, or several joined by commas")
    parser.add_argument("--client-id", default="interop")
    parser.add_argument("--instance-id", default=None)
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--strategy", action="append", default=None)
    parser.add_argument(
        "--metadata-max-age-ms", type=int, default=None,
        help="how often the consumer refreshes metadata (and so sees new partitions)",
    )  # fmt: skip
    args = parser.parse_args()
    args.strategy = args.strategy or ["range", "roundrobin"]
    signal.signal(signal.SIGTERM, on_sigterm)
    if args.lib == "aiokafka":
        asyncio.run(run_aiokafka(args))
    elif args.lib == "kafka-python":
        run_kafka_python(args)
    elif args.lib == "confluent-consumer":
        run_confluent_consumer_protocol(args)
    else:
        run_confluent(args)


if __name__ == "__main__":
    main()
