"""The three real client libraries, unmodified, configured for a listener's security protocol.

`Security` holds what a client is given (CA file, client certificate, SASL mechanism and
credentials); `consume_and_commit(lib, ...)` has one consumer of that library join a group,
read every seeded record, commit synchronously and read its committed offsets back;
`refused(lib, ...)` connects and returns the error the library reports when the server refuses
it (None if it was let in). kafka-python and confluent-kafka are synchronous; call these from a
thread (`asyncio.to_thread`) or a plain test; aiokafka runs on an event loop of its own here.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LIBRARIES = ["aiokafka", "kafka-python", "confluent"]


@dataclass(frozen=True)
class Security:
    protocol: str  # SSL, SASL_PLAINTEXT, SASL_SSL
    cafile: Path | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None


def kafka_python_options(security: Security) -> dict[str, Any]:
    options: dict[str, Any] = {"security_protocol": security.protocol}
    if security.cafile is not None:
        options.update(ssl_cafile=str(security.cafile), ssl_check_hostname=True)
    if security.certfile is not None:
        options.update(ssl_certfile=str(security.certfile), ssl_keyfile=str(security.keyfile))
    if security.mechanism is not None:
        options.update(
            sasl_mechanism=security.mechanism,
            sasl_plain_username=security.username,
            sasl_plain_password=security.password,
        )
    return options


def aiokafka_options(security: Security) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    options: dict[str, Any] = {"security_protocol": security.protocol}
    if security.cafile is not None:
        options["ssl_context"] = create_ssl_context(
            cafile=str(security.cafile),
            certfile=None if security.certfile is None else str(security.certfile),
            keyfile=None if security.keyfile is None else str(security.keyfile),
        )
    if security.mechanism is not None:
        options.update(
            sasl_mechanism=security.mechanism,
            sasl_plain_username=security.username,
            sasl_plain_password=security.password,
        )
    return options


def confluent_options(security: Security) -> dict[str, Any]:
    options: dict[str, Any] = {"security.protocol": security.protocol}
    if security.cafile is not None:
        options["ssl.ca.location"] = str(security.cafile)
    if security.certfile is not None:
        options["ssl.certificate.location"] = str(security.certfile)
        options["ssl.key.location"] = str(security.keyfile)
    if security.mechanism is not None:
        options.update(
            {
                "sasl.mechanism": security.mechanism,
                "sasl.username": security.username,
                "sasl.password": security.password,
            }
        )
    return options


def consume_and_commit(
    lib: str,
    bootstrap: str,
    security: Security,
    *,
    topic: str,
    group: str,
    count: int,
    linger: float = 0.0,
) -> tuple[int, dict[int, int]]:
    """(records read, committed offset by partition) of one consumer of `lib` in `group`;
    with `linger`, it goes on polling that many seconds before it commits."""
    if lib == "kafka-python":
        return _kafka_python_group(bootstrap, security, topic, group, count, linger)
    if lib == "aiokafka":
        return asyncio.run(_aiokafka_group(bootstrap, security, topic, group, count, linger))
    return _confluent_group(bootstrap, security, topic, group, count, linger)


def _kafka_python_commit(consumer: Any, deadline: float) -> None:
    """Commit as kafka-python's users must: a commit refused because the consumer is rejoining
    (RebalanceInProgressError; on a loaded machine its 2 s session can lapse while its own loop
    is blocked) is retried after a poll, which completes the rebalance, as the error says.

    Unless kafka-python 3.0.12 abandoned that rebalance: a poll whose timer ran out mid round
    leaves the round's task to a later poll, which awaits it only if the client still needs a
    rejoin; when it no longer does, the client stays "rejoining" and every commit is refused
    (seen once in CI at load 10-14: 30 s of refusals). That state is detected as in
    tests/interop/consumer_proc.py (`resume_abandoned_rebalance`, which explains it) and the
    client's own `request_rejoin` makes the next poll finish the round."""
    from kafka.errors import RebalanceInProgressError

    while True:
        try:
            consumer.commit()
            return
        except RebalanceInProgressError:
            if time.monotonic() > deadline:
                raise
            coordinator = consumer._coordinator
            if coordinator.rejoining and not coordinator.need_rejoin():
                coordinator.request_rejoin()
            consumer.poll(timeout_ms=200)


def _kafka_python_group(
    bootstrap: str, security: Security, topic: str, group: str, count: int, linger: float
) -> tuple[int, dict[int, int]]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **kafka_python_options(security),
    )
    # kafka-python 3.0's leader can assign before it knows the topic's partitions ("No
    # partition metadata"), leaving the group with nothing assigned: learn them first.
    consumer.partitions_for_topic(topic)
    consumer.subscribe([topic])
    try:
        read = 0
        deadline = time.monotonic() + 30
        while read < count and time.monotonic() < deadline:
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=200).values())
        until = time.monotonic() + linger
        while time.monotonic() < until:
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=100).values())
        _kafka_python_commit(consumer, deadline=time.monotonic() + 30)
        return read, {tp.partition: consumer.committed(tp) for tp in consumer.assignment()}
    finally:
        consumer.close()


async def _aiokafka_group(
    bootstrap: str, security: Security, topic: str, group: str, count: int, linger: float
) -> tuple[int, dict[int, int]]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **aiokafka_options(security),
    )
    await consumer.start()
    try:
        read = 0
        async with asyncio.timeout(30):
            while read < count:
                batches = await consumer.getmany(timeout_ms=200)
                read += sum(len(batch) for batch in batches.values())
        until = time.monotonic() + linger
        while time.monotonic() < until:
            batches = await consumer.getmany(timeout_ms=100)
            read += sum(len(batch) for batch in batches.values())
        await consumer.commit()
        return read, {tp.partition: await consumer.committed(tp) for tp in consumer.assignment()}
    finally:
        try:
            await consumer.stop()
        except asyncio.CancelledError:
            # aiokafka's Fetcher.close awaits the fetch tasks it cancels without catching their
            # CancelledError (seen when a dropped connection left one pending): not ours.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise


def _confluent_group(
    bootstrap: str, security: Security, topic: str, group: str, count: int, linger: float
) -> tuple[int, dict[int, int]]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **confluent_options(security),
        }
    )
    consumer.subscribe([topic])
    try:
        read = 0
        deadline = time.monotonic() + 30
        while read < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read += 1
        until = time.monotonic() + linger
        while time.monotonic() < until:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                read += 1
        consumer.commit(asynchronous=False)
        committed = consumer.committed(consumer.assignment(), timeout=10)
        return read, {tp.partition: tp.offset for tp in committed}
    finally:
        consumer.close()


def refused(lib: str, bootstrap: str, security: Security) -> str | None:
    """The errors `lib` reports (raised or logged) when the server refuses its connection;
    None if it was let in."""
    if lib == "confluent":
        return _confluent_refused(bootstrap, security)
    logged = _Logged()
    library_logger = logging.getLogger("kafka" if lib == "kafka-python" else "aiokafka")
    library_logger.addHandler(logged)
    try:
        if lib == "kafka-python":
            error = _kafka_python_refused(bootstrap, security)
        else:
            error = asyncio.run(_aiokafka_refused(bootstrap, security))
    finally:
        library_logger.removeHandler(logged)
        _collect_abandoned_sockets()
    return None if error is None else "; ".join([error, *logged.lines])


def _collect_abandoned_sockets() -> None:
    """kafka-python 3.0 abandons the socket of a failed bootstrap to the garbage collector;
    collect it here, quietly, rather than in whichever test runs next."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


class _Logged(logging.Handler):
    """The library's warnings and errors, which name what the server answered (the exception
    raised at the end only says the bootstrap failed)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _kafka_python_refused(bootstrap: str, security: Security) -> str | None:
    from kafka import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=5000,
            bootstrap_timeout_ms=1000,
            **kafka_python_options(security),
        )
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        admin.list_topics()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        admin.close()
    return None


async def _aiokafka_refused(bootstrap: str, security: Security) -> str | None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=5000, **aiokafka_options(security)
    )
    try:
        await producer.start()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        await producer.stop()
    return None


def _confluent_refused(bootstrap: str, security: Security) -> str | None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[str] = []
    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "error_cb": lambda error: errors.append(f"{error.name()}: {error.str()}"),
            "log_level": 0,
            **confluent_options(security),
        }
    )
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=0.3)
        except KafkaException:
            admin.poll(0.1)  # serves error_cb
            continue
        return None
    return "; ".join(errors) or "no answer"


def seed(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """Write `per_partition` records into each partition (Produce over a PLAINTEXT listener)."""
    from coordinator.testing.server import WireClient, record_batch

    async def produce() -> None:
        host, _, port = bootstrap.rpartition(":")
        client = await WireClient.connect(host, int(port))
        try:
            for partition in range(partitions):
                values = [f"{partition}-{i}".encode() for i in range(per_partition)]
                batch = {"index": partition, "records": record_batch(values)}
                response = await client.request(
                    0, 9,
                    {"acks": -1, "timeout": 5000,
                     "topic_data": [{"name": topic, "partition_data": [batch]}]},
                )  # fmt: skip
                assert response.responses[0].partition_responses[0].error_code == 0
        finally:
            await client.close()

    asyncio.run(produce())


def group_refusal(lib: str, bootstrap: str, security: Security, *, topic: str, group: str) -> str:
    """Run a consumer of `lib` in `group` until the library reports an error; returns it
    (the empty string if none came within 15 s)."""
    if lib == "kafka-python":
        return _kafka_python_group_refusal(bootstrap, security, topic, group)
    if lib == "aiokafka":
        return asyncio.run(_aiokafka_group_refusal(bootstrap, security, topic, group))
    return _confluent_group_refusal(bootstrap, security, topic, group)


def _kafka_python_group_refusal(bootstrap: str, security: Security, topic: str, group: str) -> str:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, **kafka_python_options(security)
    )
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                consumer.poll(timeout_ms=200)
            except Exception as exc:
                return f"{type(exc).__name__}: {exc}"
        return ""
    finally:
        consumer.close()


async def _aiokafka_group_refusal(
    bootstrap: str, security: Security, topic: str, group: str
) -> str:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, **aiokafka_options(security)
    )
    try:
        await consumer.start()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=200)
        return ""
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        await consumer.stop()


def _confluent_group_refusal(bootstrap: str, security: Security, topic: str, group: str) -> str:
    from confluent_kafka import Consumer

    errors: list[str] = []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "error_cb": lambda error: errors.append(f"{error.name()}: {error.str()}"),
            **confluent_options(security),
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 15
        while not errors and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is not None:
                error = message.error()
                errors.append(f"{error.name()}: {error.str()}")
        return "; ".join(errors)
    finally:
        consumer.close()


def admin_topics(lib: str, bootstrap: str, security: Security) -> list[str]:
    """The topic names `lib`'s admin client lists."""
    if lib == "kafka-python":
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, **kafka_python_options(security))
        try:
            return sorted(admin.list_topics())
        finally:
            admin.close()
    if lib == "aiokafka":
        return asyncio.run(_aiokafka_admin_topics(bootstrap, security))
    from confluent_kafka.admin import AdminClient

    confluent = AdminClient({"bootstrap.servers": bootstrap, **confluent_options(security)})
    return sorted(confluent.list_topics(timeout=10).topics)


async def _aiokafka_admin_topics(bootstrap: str, security: Security) -> list[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **aiokafka_options(security))
    await admin.start()
    try:
        return sorted(await admin.list_topics())
    finally:
        await admin.close()
