"""Assembling a running node: data dir, topics, API registry, extensions, wire server.

`ServerApp` is what both `rebalance serve` and the in-process test server run. Other packages
plug in through *extensions*: an extension is a callable taking the `Broker` (config, topics,
registry, data dir) and returning an async context manager. It is entered before the server
answers requests (register API modules with `broker.registry.register(module)`, whose handlers
reach the extension's own objects; open stores under `broker.data_dir`) and exited after
the server has stopped, so it can flush and close what it opened. The data dir is locked and the
port bound before any extension is entered (see `ServerApp.start`); the topics given at start
are created after every extension is in.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from coordinator.errors import OperationalError
from coordinator.node.access_control import AccessControl, parse_super_users
from coordinator.node.apis import builtin_registry
from coordinator.node.authorization import guard
from coordinator.node.cluster_settings import CLUSTER_ONLY
from coordinator.node.config import ServerConfig
from coordinator.node.contract import Broker
from coordinator.node.data_dir import DirectoryLock
from coordinator.node.described_configs import (
    BrokerSettings,
    given_entry,
    model_entries,
    table_entries,
)
from coordinator.node.kafka_settings import announced, inert_entries
from coordinator.node.open_listeners import Opened, open_listeners
from coordinator.node.server import WireServer
from coordinator.node.topic_admin import TopicChangeRefused
from coordinator.partition_log.partition import LogCorruptError
from coordinator.partition_log.producer_ids import ProducerIdAllocator
from coordinator.partition_log.topics import TopicStore
from coordinator.wire.config_entries import ConfigEntry, ConfigType
from coordinator.wire.security.credentials import CredentialStore
from coordinator.wire.security.sasl import SaslAuthority, parse_mechanisms
from coordinator.wire.security.session import ServedListener

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
        self._lock: DirectoryLock | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Lock the data dir, listen, open the stores and extensions, serve; returns the bound
        address.

        The data dir's lock comes before anything is read or written there; the port is bound
        next, before any store opens. A start that fails raises (an `OperationalError` for what
        an operator can fix), closes what it opened, releases the lock and removes the data dir
        if it created it.
        """
        lock = DirectoryLock.acquire(self.data_dir)
        try:
            listeners = open_listeners(self.config, (host, port))
        except BaseException:
            lock.release(remove_created=True)
            raise
        try:
            address = await self._open(listeners)
        except BaseException as exc:
            for listener, _ in listeners:
                listener.close()
            await self._stack.aclose()
            lock.release(remove_created=True)
            if isinstance(exc, OSError) and exc.filename is not None:
                raise OperationalError(
                    f"cannot open {exc.filename}: {exc.strerror}; check its permissions and "
                    f"free space"
                ) from exc
            raise
        self._lock = lock
        return address

    async def _open(self, listeners: Opened) -> tuple[str, int]:
        try:
            topics = TopicStore(self.data_dir)
        except LogCorruptError as exc:
            raise LogCorruptError(
                f"{exc}; see the damage with 'rebalance repair --data-dir {self.data_dir}' and "
                f"cut the log after its last valid batch by adding --truncate (keeps a backup)"
            ) from exc
        self._stack.callback(topics.close)
        host, port = listeners[0][0].getsockname()[:2]
        settings = BrokerSettings()
        settings.add(lambda: model_entries(self.config, skip=_SHOWN_AS_BOUND))
        settings.add(lambda: table_entries(self.config.cluster_only, CLUSTER_ONLY))
        settings.add(lambda: inert_entries(self.config.inert))
        broker = Broker(
            self.config,
            topics,
            builtin_registry(),
            host,
            port,
            self.data_dir,
            ProducerIdAllocator(self.data_dir),
            settings,
        )
        settings.add(lambda: self._address_entries())
        self.broker = broker
        for extension in self._extensions:
            await self._stack.enter_async_context(extension(broker))
        if self.config.cluster_only:
            given = ", ".join(f"{k}={v}" for k, v in sorted(self.config.cluster_only.items()))
            logger.warning("these settings only matter on a cluster; on this one node they have "
                           "no effect: %s", given)  # fmt: skip
        if self.config.inert:
            logger.warning(
                "these settings of Kafka's broker are accepted but have no effect on this "
                "node: %s", announced(self.config.inert),
            )  # fmt: skip
        # Only once everything opened: a failed start creates no topic.
        for name, partitions in self._initial_topics:
            if name in broker.internal_topics:
                raise OperationalError(f"topic {name} is internal: it cannot be created")
            try:
                topic = await broker.topic_admin.create(name, partitions)
            except TopicChangeRefused as exc:  # cluster mode: the catalogue said no
                raise OperationalError(f"topic {name} cannot be created: {exc}") from exc
            if len(topic.partitions) != partitions:
                logger.warning(
                    "topic %s already exists with %d partitions; keeping them (asked for %d)",
                    name,
                    len(topic.partitions),
                    partitions,
                )
        self._open_sasl(listeners)
        self._open_access_control(broker)
        self.server = WireServer(broker)
        addresses = [await self.server.start(sock, served) for sock, served in listeners]
        return addresses[0]

    def _open_access_control(self, broker: Broker) -> None:
        """ACLs and their checks, when an authorizer is configured (after the extensions, so
        that the group APIs they registered are guarded too)."""
        if not self.config.authorizer_class_name:
            return
        access = AccessControl(
            self.data_dir,
            super_users=parse_super_users(self.config.super_users),
            allow_if_no_acl=self.config.allow_everyone_if_no_acl_found,
        )
        self._stack.callback(access.close)
        broker.access = access
        guard(broker.registry, access)

    def _open_sasl(self, listeners: Opened) -> None:
        """The credentials and SASL side of SASL listeners (`coordinator.wire.security.sasl`)."""
        sasl = [served for _, served in listeners if served is not None and served.uses_sasl]
        if not sasl:
            return
        credentials = CredentialStore(self.data_dir)
        self._stack.callback(credentials.close)
        authority = SaslAuthority(
            parse_mechanisms(self.config.sasl_enabled_mechanisms),
            credentials,
            reauth_ms=self.config.connections_max_reauth_ms,
            failure_delay_ms=self.config.connection_failed_authentication_delay_ms,
        )
        for served in sasl:
            served.sasl = authority

    @property
    def listeners(self) -> list[ServedListener]:
        """The listeners served, the node's main one first (empty until started)."""
        return [] if self.server is None else list(self.server.listeners)

    def _address_entries(self) -> list[ConfigEntry]:
        """The listeners as bound and advertised (`--bind`/`--advertise` or `listeners`), and
        `--data-dir`, under their Kafka names."""
        served = self.listeners
        bound = ",".join(f"{s.name}://{_endpoint(*s.bound)}" for s in served)
        advertised = ",".join(f"{s.name}://{_endpoint(*s.advertised)}" for s in served)
        return [
            given_entry("listeners", bound, ConfigType.STRING),
            given_entry("advertised.listeners", advertised, ConfigType.STRING),
            given_entry("log.dirs", str(self.data_dir), ConfigType.STRING),
        ]

    async def stop(self, grace: float = 10.0) -> None:
        if self.server is not None:
            await self.server.close(grace)
            self.server = None
        await self._stack.aclose()
        if self._lock is not None:
            self._lock.release()  # last: every file of the data dir is closed
            self._lock = None


#: Listed with their actual values (bound ports, derived addresses) by `_address_entries`.
_SHOWN_AS_BOUND = ("listeners", "advertised_listeners", "log_dirs", "log_dir")


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
