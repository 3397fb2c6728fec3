"""`rebalance serve --zookeeper HOST:PORT[/chroot]`: this node registers as a Kafka 0.8 broker.

An extension of `ServerApp` (like the group coordinator's): on start it opens a ZooKeeper
session, registers the node in `/brokers/ids/<broker id>` (ephemeral, 0.8's JSON, the advertised
host and port) and every topic it hosts in `/brokers/topics/<topic>` (persistent,
`{"version":1,"partitions":{"<p>":[<broker id>]}}`), and from then on follows the topic store:
a topic created (auto-creation, `--topic`, admin APIs) or grown is written at once, and a
deleted one is removed (as 0.8.2's controller does once a deletion completes). When its
session expires it registers again, as 0.8's `KafkaHealthcheck` does; topics are persistent and
stay. On stop it closes the session, so its `/brokers/ids` znode disappears.

A second node with the same broker id is refused with 0.8's words while the first is alive
(`ZkUtils.registerBrokerInZk`); a restart faster than the session timeout waits for the old
registration to expire instead, as 0.8 does.

Where we differ: in 0.8 topics are written by the admin tools and the controller, which also
writes leader/ISR state under `/brokers/topics/<t>/partitions`; a node here is its topics' only
replica and leader, and consumers find leaders with Metadata requests, as 0.8's fetcher does.
A topic already registered by another broker is left alone (logged).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from coordinator.node.contract import Broker
from coordinator.partition_log.topics import Topic
from coordinator.zookeeper.client import ConnectTimeout, NodeExists, ZooKeeper
from coordinator.zookeeper.connect import BrokerRegistrationError, parse_zookeeper_connect
from coordinator.zookeeper.recipes import create_ephemeral_expect_conflict
from rebalance.zookeeper.formats import (
    BrokerRegistration,
    FormatError,
    broker_path,
    encode_topic,
    parse_broker,
    parse_topic,
    topic_path,
)

log = logging.getLogger("coordinator.zookeeper")

WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


class ZooKeeperBrokerRegistration:
    """The extension; `registration` is what is (or will be) in `/brokers/ids/<id>`."""

    def __init__(self, connect: str, *, session_timeout_ms: int = 6000) -> None:
        self.connect = parse_zookeeper_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self.zk: ZooKeeper | None = None
        self.registration: BrokerRegistration | None = None
        self._broker: Broker | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._topic_lock = asyncio.Lock()

    @asynccontextmanager
    async def __call__(self, broker: Broker) -> AsyncIterator[ZooKeeperBrokerRegistration]:
        self._broker = broker
        self.registration = BrokerRegistration(
            broker.node_id, *advertised_address(broker), timestamp=str(int(time.time() * 1000))
        )
        zk = ZooKeeper(
            self.connect, session_timeout_ms=self.session_timeout_ms, on_state=self._state_changed
        )
        try:
            await zk.start()
        except ConnectTimeout as exc:
            raise BrokerRegistrationError(f"cannot register in ZooKeeper: {exc}") from None
        self.zk = zk
        unsubscribe = forget = None
        try:
            await self._register_broker()
            for topic in list(broker.topics):
                await self.register_topic(topic)
            unsubscribe = broker.topics.subscribe(self._topic_changed)
            forget = broker.topics.on_deleted(self._topics_deleted)
            yield self
        finally:
            if unsubscribe is not None:
                unsubscribe()
            if forget is not None:
                forget()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await zk.close()
            self.zk = None

    async def settled(self) -> None:
        """Wait until the ZooKeeper writes under way are done: topics created when the node
        starts (or since) are written by tasks, and a consumer that starts before its topic is
        in `/brokers/topics` sees it appear, which is a rebalance of its own."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _register_broker(self) -> None:
        assert self.zk is not None and self.registration is not None
        mine = self.registration
        path = broker_path(mine.broker_id)

        def is_ours(data: bytes) -> bool:
            try:
                return parse_broker(mine.broker_id, data).same_broker(mine)
            except FormatError:
                return False

        try:
            await create_ephemeral_expect_conflict(
                self.zk, path, mine.encode(), is_ours, self.session_timeout_ms / 1000
            )
        except NodeExists:
            raise BrokerRegistrationError(
                f"A broker is already registered on the path {path}. This probably indicates "
                "that you either have configured a brokerid that is already in use, or else you "
                "have shutdown this broker and restarted it faster than the zookeeper timeout so "
                "it appears to be re-registering."
            ) from None
        log.info("Registered broker %d at path %s with address %s.", mine.broker_id, path,
                 mine.address)  # fmt: skip

    async def register_topic(self, topic: Topic) -> None:
        """Write `/brokers/topics/<topic>` if it is missing or lists fewer of our partitions."""
        assert self.zk is not None and self.registration is not None
        broker_id = self.registration.broker_id
        wanted = {p: [broker_id] for p in range(len(topic.partitions))}
        path = topic_path(topic.name)
        async with self._topic_lock:
            stored = await self.zk.get_or_none(path)
            if stored is None:
                try:
                    await self.zk.create(path, encode_topic(wanted), makepath=True)
                    return
                except NodeExists:
                    stored = await self.zk.get_or_none(path)
                    if stored is None:
                        return
            try:
                current = parse_topic(topic.name, stored[0])
            except FormatError as exc:
                log.warning("not updating %s: %s", path, exc)
                return
            if current == wanted:
                return
            if any(replicas != [broker_id] for replicas in current.values()):
                log.warning("%s is registered by another broker; left as it is", path)
                return
            if len(current) < len(wanted):
                await self.zk.set(path, encode_topic(wanted, grown=True))
                log.info("topic %s grew to %d partitions in ZooKeeper", topic.name, len(wanted))

    async def unregister_topics(self, names: list[str]) -> None:
        """Remove `/brokers/topics/<topic>` of deleted topics that only this broker hosts."""
        assert self.zk is not None and self.registration is not None
        broker_id = self.registration.broker_id
        async with self._topic_lock:
            for name in names:
                path = topic_path(name)
                stored = await self.zk.get_or_none(path)
                if stored is None:
                    continue
                try:
                    current = parse_topic(name, stored[0])
                except FormatError as exc:
                    log.warning("not removing %s: %s", path, exc)
                    continue
                if any(replicas != [broker_id] for replicas in current.values()):
                    log.warning("%s is registered by another broker; left as it is", path)
                    continue
                await self.zk.delete(path)
                log.info("topic %s deleted from ZooKeeper", name)

    async def _topics_deleted(self, names: list[str]) -> None:
        # A task, not awaited: DeleteTopics does not wait for ZooKeeper (which may be away).
        self._spawn(self.unregister_topics(names))

    def _topic_changed(self, topic: Topic) -> None:
        self._spawn(self.register_topic(topic))

    def _state_changed(self, state: str, new_session: bool) -> None:
        if state == "connected" and new_session:
            log.info("ZooKeeper session expired; registering broker again")
            self._spawn(self._register_broker())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("ZooKeeper registration failed: %s", task.exception())


def advertised_address(broker: Broker) -> tuple[str, int]:
    """The host and port consumers should use: the advertised ones, else the bound ones (a
    wildcard address becomes this machine's name, as 0.8 uses `getCanonicalHostName`)."""
    host = broker.config.advertised_host or broker.host
    port = broker.config.advertised_port or broker.port
    if host in WILDCARD_HOSTS:
        host = socket.getfqdn()
    if port == 0:
        raise BrokerRegistrationError(
            "registering in ZooKeeper needs the node's port: bind a fixed port"
        )
    return host, port
