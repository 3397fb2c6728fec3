"""An in-process server for tests and embedding: `running_server(...)` and a pytest plugin.

    async with running_server(topics=[("t1", 3)]) as node:
        producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap)

The server listens on 127.0.0.1 on an ephemeral port, with a temporary data dir unless one is
given, and the context manager returns only once the port accepts connections (aiokafka gives
up at once if it cannot bootstrap). Enable the fixtures with
`pytest_plugins = ["coordinator.pytest_plugin"]`.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from coordinator.app import Extension, ServerApp
from coordinator.config import ServerConfig, parse_settings
from coordinator.wire.handlers import Broker


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
    config: ServerConfig | None = None,
    data_dir: Path | None = None,
    extensions: Sequence[Extension] = (),
    host: str = "127.0.0.1",
) -> AsyncIterator[RunningServer]:
    """Run a node in this event loop for the duration of the block."""
    with tempfile.TemporaryDirectory(prefix="rebalance-") as scratch:
        directory = data_dir if data_dir is not None else Path(scratch)
        app = ServerApp(
            config if config is not None else parse_settings(settings),
            directory,
            topics=topics,
            extensions=extensions,
        )
        bound_host, bound_port = await app.start(host, 0)
        assert app.broker is not None
        try:
            yield RunningServer(bound_host, bound_port, directory, app.broker, app)
        finally:
            await app.stop(grace=2.0)
