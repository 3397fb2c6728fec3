"""Assembling a running node: data dir, topics, API registry, extensions, wire server.

`ServerApp` is what both `rebalance serve` and the in-process test server run. Other packages
plug in through *extensions*: an extension is a callable taking the `Broker` (config, topics,
registry, services, data dir) and returning an async context manager. It is entered before the
port opens (register API modules with `broker.registry.register(module)`, add services with
`broker.services.add(obj)`, open stores under `broker.data_dir`) and exited after the server
has stopped, so it can flush and close what it opened.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from coordinator.config import ServerConfig
from coordinator.log.producer_ids import ProducerIdAllocator
from coordinator.log.topics import TopicStore
from coordinator.wire.handlers import Broker, builtin_registry
from coordinator.wire.server import WireServer

logger = logging.getLogger("coordinator.serve")

Extension = Callable[[Broker], AbstractAsyncContextManager[object]]


class ServerApp:
    """A node: start() opens everything and listens; stop() shuts down gracefully."""

    def __init__(
        self,
        config: ServerConfig,
        data_dir: Path,
        *,
        topics: Sequence[tuple[str, int]] = (),
        extensions: Sequence[Extension] = (),
    ) -> None:
        self.config = config
        self.data_dir = data_dir
        self._initial_topics = list(topics)
        self._extensions = list(extensions)
        self._stack = contextlib.AsyncExitStack()
        self.broker: Broker | None = None
        self.server: WireServer | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        topics = TopicStore(self.data_dir)
        self._stack.callback(topics.close)
        for name, partitions in self._initial_topics:
            topic = topics.create(name, partitions)
            if len(topic.partitions) != partitions:
                logger.warning(
                    "topic %s already exists with %d partitions; keeping them (asked for %d)",
                    name,
                    len(topic.partitions),
                    partitions,
                )
        broker = Broker(self.config, topics, builtin_registry(), host, port, self.data_dir)
        broker.services.add(ProducerIdAllocator(self.data_dir))
        self.broker = broker
        try:
            for extension in self._extensions:
                await self._stack.enter_async_context(extension(broker))
            self.server = WireServer(broker)
            address = await self.server.start(host, port)
        except BaseException:
            await self._stack.aclose()
            raise
        return address

    async def stop(self, grace: float = 10.0) -> None:
        if self.server is not None:
            await self.server.close(grace)
            self.server = None
        await self._stack.aclose()
