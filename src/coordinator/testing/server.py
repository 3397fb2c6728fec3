"""Test and embedding helpers: an in-process server, a raw protocol client, record batches.

    async with running_server(topics=[("t1", 3)]) as node:
        producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap)

    with server_in_thread(topics=[("t1", 3)]) as node:       # for synchronous code
        consumer = KafkaConsumer("t1", bootstrap_servers=node.bootstrap)

`running_server` listens on 127.0.0.1 on an ephemeral port, with a temporary data dir unless one
is given, and returns only once the port accepts connections (aiokafka gives up at once if it
cannot bootstrap). Both take `settings` as a dict of Kafka-named broker settings
(`{"group.max.size": 10}`) or as `KEY=VALUE` strings, as `--set` takes them, and `topics` as
`(name, partitions)` pairs, `"name:partitions"` or a bare `"name"` (the broker's
`num.partitions`). `server_in_thread`, like the pytest fixtures, starts from `TEST_DEFAULTS`
(`group.initial.rebalance.delay.ms=0`: a group forms without Kafka's 3 s wait);
`running_server` from Kafka's defaults. `server_in_thread` runs the same on an event loop of
its own in a background thread, so synchronous clients (kafka-python, confluent-kafka) and
tests on any event loop can use it; the pytest plugin (`coordinator.testing.pytest_plugin`,
installed as a pytest plugin) builds its fixtures on it. `WireClient` speaks the protocol through
kio (including malformed bytes on purpose), and `record_batch`/`read_records` make and read v2
record batches.
"""

from __future__ import annotations

import asyncio
import datetime
import io
import tempfile
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.node.app import Extension, ServerApp
from coordinator.node.config import ServerConfig, SettingClaim, parse_settings
from coordinator.node.contract import Broker
from coordinator.wire.client import WireClient, read_records

__all__ = [
    "TEST_DEFAULTS",
    "RunningServer",
    "Settings",
    "Topics",
    "WireClient",
    "read_records",
    "record_batch",
    "running_server",
    "server_in_thread",
]


Settings = Mapping[str, object] | Iterable[str]
"""Broker settings: `{"num.partitions": 3}` or `["num.partitions=3"]`."""
Topics = Sequence[tuple[str, int] | str]
"""Topics to create: `("orders", 3)`, `"orders:3"` or `"orders"` (the broker's num.partitions)."""

TEST_DEFAULTS: Mapping[str, object] = {"group.initial.rebalance.delay.ms": 0}
"""Where the test helpers differ from Kafka's defaults: groups form at once."""


def setting_lines(settings: Settings) -> list[str]:
    """`KEY=VALUE` lines, from a dict (booleans written as Kafka writes them) or as given."""
    if isinstance(settings, Mapping):
        return [
            f"{key}={str(value).lower() if isinstance(value, bool) else value}"
            for key, value in settings.items()
        ]
    if isinstance(settings, str):
        return [settings]
    lines = list(settings)
    for line in lines:
        if not isinstance(line, str):
            raise TypeError(
                f"settings: give a dict of Kafka setting names to values, or KEY=VALUE strings; "
                f"got {line!r}"
            )
    return lines


def topic_specs(topics: Topics) -> list[tuple[str, int | None]]:
    """Each topic as (name, partitions); None partitions: the broker's `num.partitions`.
    `ValueError` saying what is expected for anything else."""
    specs: list[tuple[str, int | None]] = []
    for topic in [topics] if isinstance(topics, str) else topics:
        if isinstance(topic, str):
            name, sep, count = topic.rpartition(":")
            if not sep:
                specs.append((topic, None))
                continue
            if name and count.isdigit() and int(count) >= 1:
                specs.append((name, int(count)))
                continue
        elif (
            isinstance(topic, tuple)
            and len(topic) == 2
            and isinstance(topic[0], str)
            and isinstance(topic[1], int)
            and topic[1] >= 1
        ):
            specs.append(topic)
            continue
        raise ValueError(
            f'topics: each is "name", "name:partitions" or (name, partitions) with '
            f"partitions >= 1; got {topic!r}"
        )
    return specs


@dataclass(frozen=True)
class RunningServer:
    """A started node: where to connect and its internals (for assertions)."""

    host: str
    port: int
    data_dir: Path
    broker: Broker
    app: ServerApp
    loop: asyncio.AbstractEventLoop
    """The event loop the server runs on."""

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def bootstrap_of(self, listener: str) -> str:
        """HOST:PORT of the named listener as bound (`listeners=NAME://...`)."""
        for served in self.app.listeners:
            if served.name == listener.upper():
                host, port = served.bound
                return f"{host}:{port}"
        raise LookupError(f"no listener named {listener}")


@asynccontextmanager
async def running_server(
    *,
    topics: Topics = (),
    settings: Settings = (),
    claims: Sequence[SettingClaim] = (),
    config: ServerConfig | None = None,
    data_dir: Path | None = None,
    extensions: Sequence[Extension] = (),
    host: str = "127.0.0.1",
    port: int = 0,
    groups: GroupCoordinatorExtension | bool = True,
) -> AsyncIterator[RunningServer]:
    """Run a node in this event loop for the duration of the block.

    `settings` are a dict or `KEY=VALUE` strings as for `--set` (see the module's docstring),
    over Kafka's defaults; keys the server does not know go to `claims` (see
    `coordinator.node.config.parse_settings`), group coordinator keys (e.g.
    `group.initial.rebalance.delay.ms=0`) included. `config` replaces both. The group
    coordinator runs unless `groups=False`; pass a `GroupCoordinatorExtension` to configure it.
    `port` 0 picks a free one.
    """
    if groups is True:
        groups = GroupCoordinatorExtension()
    if isinstance(groups, GroupCoordinatorExtension):
        extensions = [groups, *extensions]
        claims = [groups, *claims]
    with tempfile.TemporaryDirectory(prefix="rebalance-") as scratch:
        directory = data_dir if data_dir is not None else Path(scratch)
        if config is None:
            config = parse_settings(setting_lines(settings), claims=claims)
        app = ServerApp(
            config,
            directory,
            topics=[(name, count or config.num_partitions) for name, count in topic_specs(topics)],
            extensions=extensions,
        )
        bound_host, bound_port = await app.start(host, port)
        assert app.broker is not None
        try:
            yield RunningServer(
                bound_host, bound_port, directory, app.broker, app, asyncio.get_running_loop()
            )
        finally:
            await app.stop(grace=2.0)


@contextmanager
def server_in_thread(
    *,
    topics: Topics = (),
    settings: Settings = (),
    data_dir: Path | None = None,
    groups: GroupCoordinatorExtension | bool = True,
) -> Iterator[RunningServer]:
    """`running_server` on an event loop of its own, in a daemon thread, for the block, with
    `settings` over `TEST_DEFAULTS` (as the pytest fixtures).

    Returns once the port accepts connections; a failed start raises here. The server's
    objects (`broker`, `app`) belong to its loop: read them for assertions, but call into them
    with `asyncio.run_coroutine_threadsafe` on `RunningServer.loop`, never directly.
    """
    started: Future[tuple[RunningServer, asyncio.Event]] = Future()
    stopped: Future[None] = Future()
    lines = setting_lines(TEST_DEFAULTS) + setting_lines(settings)  # the last value counts
    topic_specs(topics)  # a wrong one fails here, in the caller's thread

    async def serve() -> None:
        stop = asyncio.Event()
        async with running_server(
            topics=topics, settings=lines, data_dir=data_dir, groups=groups
        ) as server:
            started.set_result((server, stop))
            await stop.wait()

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:  # to the caller: at start, or when the block ends
            (stopped if started.done() else started).set_exception(exc)
        else:
            stopped.set_result(None)

    thread = threading.Thread(target=run, name="rebalance-server", daemon=True)
    thread.start()
    server, stop = started.result()
    try:
        yield server
    finally:
        server.loop.call_soon_threadsafe(stop.set)
        thread.join()
        stopped.result()


def record_batch(
    values: Sequence[bytes | None],
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamp_ms: int = 1_700_000_000_000,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """A v2 record batch as a producer would send it (base offset 0), written by kio.

    Pass producer_id/epoch/base_sequence for an idempotent producer's batch.
    """
    moment = TZAwareMicros.parse(datetime.datetime.fromtimestamp(timestamp_ms / 1000, datetime.UTC))
    records = tuple(
        Record(
            attributes=i8(0),
            timestamp=moment,
            offset=i64(index),
            key=keys[index] if keys is not None else None,
            value=value,
            headers=(),
        )
        for index, value in enumerate(values)
    )
    batch = NewRecordBatch(
        producer_id=i64(producer_id),
        producer_epoch=i16(producer_epoch),
        base_sequence=i32(base_sequence),
        records=records,
        attributes=i16(0),
    )
    buffer = io.BytesIO()
    write_batch(buffer, batch)
    return buffer.getvalue()
