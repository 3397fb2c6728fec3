"""Test and embedding helpers: an in-process server, a raw protocol client, record batches.

    async with running_server(topics=[("t1", 3)]) as node:
        producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap)

    with server_in_thread(topics=[("t1", 3)]) as node:       # for synchronous code
        consumer = KafkaConsumer("t1", bootstrap_servers=node.bootstrap)

`running_server` listens on 127.0.0.1 on an ephemeral port, with a temporary data dir unless one
is given, and returns only once the port accepts connections (aiokafka gives up at once if it
cannot bootstrap). `server_in_thread` runs the same on an event loop of its own in a background
thread, so synchronous clients (kafka-python, confluent-kafka) and tests on any event loop can
use it; the pytest plugin (`coordinator.pytest_plugin`, installed as a pytest plugin) builds
its fixtures on it. `WireClient` speaks the protocol through kio (including malformed bytes on
purpose), and `record_batch`/`read_records` make and read v2 record batches.
"""

from __future__ import annotations

import asyncio
import datetime
import io
import tempfile
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from coordinator.apis.contract import Broker
from coordinator.app import Extension, ServerApp
from coordinator.config import ServerConfig, SettingClaim, parse_settings
from coordinator.groups import GroupCoordinatorExtension
from coordinator.wire.client import WireClient, read_records

__all__ = [
    "RunningServer",
    "WireClient",
    "read_records",
    "record_batch",
    "running_server",
    "server_in_thread",
]


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
    topics: Sequence[tuple[str, int]] = (),
    settings: Iterable[str] = (),
    claims: Sequence[SettingClaim] = (),
    config: ServerConfig | None = None,
    data_dir: Path | None = None,
    extensions: Sequence[Extension] = (),
    host: str = "127.0.0.1",
    port: int = 0,
    groups: GroupCoordinatorExtension | bool = True,
) -> AsyncIterator[RunningServer]:
    """Run a node in this event loop for the duration of the block.

    `settings` are `KEY=VALUE` strings as for `--set`; keys the server does not know go to
    `claims` (see `coordinator.config.parse_settings`), group coordinator keys (e.g.
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
        app = ServerApp(
            config if config is not None else parse_settings(settings, claims=claims),
            directory,
            topics=topics,
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
    topics: Sequence[tuple[str, int]] = (),
    settings: Iterable[str] = (),
    data_dir: Path | None = None,
    groups: GroupCoordinatorExtension | bool = True,
) -> Iterator[RunningServer]:
    """`running_server` on an event loop of its own, in a daemon thread, for the block.

    Returns once the port accepts connections; a failed start raises here. The server's
    objects (`broker`, `app`) belong to its loop: read them for assertions, but call into them
    with `asyncio.run_coroutine_threadsafe` on `RunningServer.loop`, never directly.
    """
    started: Future[tuple[RunningServer, asyncio.Event]] = Future()
    stopped: Future[None] = Future()

    async def serve() -> None:
        stop = asyncio.Event()
        async with running_server(
            topics=topics, settings=settings, data_dir=data_dir, groups=groups
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
