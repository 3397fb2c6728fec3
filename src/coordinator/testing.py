"""Test and embedding helpers: an in-process server, a raw protocol client, record batches.

    async with running_server(topics=[("t1", 3)]) as node:
        producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap)

`running_server` listens on 127.0.0.1 on an ephemeral port, with a temporary data dir unless one
is given, and returns only once the port accepts connections (aiokafka gives up at once if it
cannot bootstrap). The pytest fixtures built on it are enabled with
`pytest_plugins = ["coordinator.pytest_plugin"]`. `WireClient` speaks the protocol through kio
(including malformed bytes on purpose), and `record_batch`/`read_records` make and read v2
record batches.
"""

from __future__ import annotations

import datetime
import io
import tempfile
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from coordinator.app import Extension, ServerApp
from coordinator.config import ServerConfig, SettingClaim, parse_settings
from coordinator.groups import GroupCoordinatorExtension
from coordinator.wire.client import WireClient, read_records
from coordinator.wire.handlers import Broker

__all__ = [
    "RunningServer",
    "WireClient",
    "read_records",
    "record_batch",
    "running_server",
]


@dataclass(frozen=True)
class RunningServer:
    """A started node: where to connect and its internals (for assertions)."""

    host: str
    port: int
    data_dir: Path
    broker: Broker
    app: ServerApp

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


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
        claims = [groups.claim, *claims]
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
            yield RunningServer(bound_host, bound_port, directory, app.broker, app)
        finally:
            await app.stop(grace=2.0)


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
