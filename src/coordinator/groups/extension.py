"""The group coordinator as a server extension: store, core, runtime, event log, group APIs.

`GroupCoordinatorExtension` is what `rebalance serve` and the in-process test server plug into
`ServerApp`. It claims the group settings of `--set KEY=VALUE` (Kafka's names, validated by
`rebalance.config.CoordinatorConfig`), opens `groups.sqlite` in the data dir (or the store its
`store` argument opens: cluster mode's, `coordinator.cluster`), replays it into a fresh core (the
partitions the broker's `Ownership` lets it answer for: every one on a single node), registers
the group API modules and publishes the `GroupRuntime` as a service. It also
makes `__consumer_offsets` an internal topic of the node (`coordinator.partition_log.internal`),
with the partition count the core places groups by.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from coordinator.errors import OperationalError
from coordinator.groups.apis import GROUP_APIS
from coordinator.groups.event_log.log import EventLog
from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.base import RecordStore
from coordinator.groups.store.sqlite import SqliteStore
from coordinator.node.contract import Broker
from coordinator.node.data_dir import DirectoryLock
from coordinator.node.described_configs import model_entries
from coordinator.partition_log.internal import GROUP_METADATA_TOPIC
from coordinator.partition_log.topics import TopicStore
from rebalance.config import CoordinatorConfig
from rebalance.core import GroupCoordinatorCore
from rebalance.rng import SplitMix64
from rebalance.topics import TopicInfo, TopicMetadata

STORE_FILE = "groups.sqlite"
EVENTS_DIR = "events"


class GroupCoordinatorExtension:
    """The group coordinator as a node extension: core, SQLite store and, unless `event_log` is
    false, the JSON Lines event log (in `event_log_dir`, default `DATA_DIR/events`)."""

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        event_log: bool = True,
        event_log_dir: Path | None = None,
        event_log_max_bytes: int | None = None,
        seed: int | None = None,
        store: Callable[[Broker], RecordStore] | None = None,
    ) -> None:
        self._settings: dict[str, Any] = {}
        self._config = config
        self.event_log = event_log
        self.event_log_dir = event_log_dir
        self.event_log_max_bytes = event_log_max_bytes
        self.seed = seed
        #: Opens the record store for a broker (cluster mode: PostgreSQL); default SQLite.
        self.open_store = store or _sqlite_store
        self.runtime: GroupRuntime | None = None

    def owns(self, key: str) -> bool:
        """The `--set` hook (`coordinator.node.config.SettingClaim`): the group coordinator's
        keys."""
        return key in CoordinatorConfig.kafka_keys()

    def settle(self, settings: Mapping[str, str]) -> None:
        """All of its `--set` values at once, validated together (raises `ConfigError` naming
        the key at fault). A config given to the constructor stays the one in force."""
        checked = CoordinatorConfig.from_properties({**self._settings, **settings})
        self._settings = {**self._settings, **settings}
        if self._config is None:
            self._config = checked

    @property
    def config(self) -> CoordinatorConfig:
        if self._config is None:
            self._config = CoordinatorConfig.from_properties(self._settings)
        return self._config

    @asynccontextmanager
    async def __call__(self, broker: Broker) -> AsyncIterator[GroupRuntime]:
        seed = self.seed if self.seed is not None else int.from_bytes(os.urandom(8), "big")
        if broker.topics.get(GROUP_METADATA_TOPIC) is not None:
            raise OperationalError(
                f"{broker.data_dir}: holds an ordinary topic named {GROUP_METADATA_TOPIC}, which "
                f"is the coordinator's internal topic; move "
                f"{broker.topics.root / GROUP_METADATA_TOPIC} out of the data dir"
            )
        async with contextlib.AsyncExitStack() as stack:
            # The event log's lock first: a directory another server writes to is refused
            # before this start touches anything.
            lock = self._lock_event_log(broker, stack) if self.event_log else None
            store = self.open_store(broker)
            stack.callback(store.close)
            events = self._open_event_log(broker, stack) if self.event_log else None
            core = GroupCoordinatorCore(self.config, SplitMix64(seed))
            # The topics first: loading a consumer group compares them with its records.
            core.topics_changed(topic_metadata(broker.topics), 0)
            runtime = GroupRuntime(core, store, events, ownership=broker.ownership)
            stack.push_async_callback(runtime.close)
            await runtime.start()
            for module in GROUP_APIS:
                broker.registry.register(module)
            broker.internal_topics.add(
                GROUP_METADATA_TOPIC,
                self.config.offsets_topic_num_partitions,
                broker.config.cluster_id,
            )
            broker.groups = runtime
            broker.settings.add(lambda: model_entries(self.config))
            stack.callback(broker.topics.on_deleted(runtime.topics_deleted))
            topics = broker.topics

            def topics_changed(_: object = None) -> None:
                runtime.topics_changed(topic_metadata(topics))

            async def topics_deleted(_: list[str]) -> None:
                topics_changed()

            stack.callback(topics.subscribe(topics_changed))
            stack.callback(topics.on_deleted(topics_deleted))
            self.runtime = runtime
            if lock is not None:
                lock.keep()  # started: from now on the directory holds the log, a failure or not
            yield runtime

    def _event_log_dir(self, broker: Broker) -> Path:
        return self.event_log_dir or broker.data_dir / EVENTS_DIR

    def _lock_event_log(self, broker: Broker, stack: contextlib.AsyncExitStack) -> DirectoryLock:
        """Lock the event log's directory like the data dir, the default one inside the data
        dir too (two servers must not append to the same files, and another server's
        `--event-log` may name this one's); it is removed again if this start created it and
        then failed."""
        directory = self._event_log_dir(broker)
        lock = DirectoryLock.acquire(directory, what="event log dir", option="--event-log")
        stack.callback(lock.release, remove_created=True)
        return lock

    def _open_event_log(self, broker: Broker, stack: contextlib.AsyncExitStack) -> EventLog:
        """The event log (in its locked directory), closed by `stack`."""
        directory = self._event_log_dir(broker)
        try:
            events = EventLog(
                directory,
                broker.node_id,
                **({"max_bytes": self.event_log_max_bytes} if self.event_log_max_bytes else {}),
            )
        except OSError as exc:
            raise OperationalError(
                f"cannot use event log dir {directory}: {exc.strerror}; fix its permissions, or "
                f"choose another --event-log"
            ) from exc
        stack.callback(events.close)
        return events


def _sqlite_store(broker: Broker) -> RecordStore:
    return SqliteStore(broker.data_dir / STORE_FILE)


def topic_metadata(topics: TopicStore) -> TopicMetadata:
    """The core's view of the node's topics (consumer groups assign from it)."""
    return TopicMetadata.of(
        TopicInfo(topic.name, str(topic.topic_id), len(topic.partitions)) for topic in topics
    )
