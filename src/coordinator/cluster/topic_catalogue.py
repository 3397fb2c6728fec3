"""The cluster's topics, decided in PostgreSQL: `TopicCatalogue`, the `TopicAdmin` of a node in
cluster mode, and `ClusterTopicsExtension`, which puts it on the broker.

Every topic change a node is asked for (CreateTopics, DeleteTopics, CreatePartitions,
AlterConfigs, IncrementalAlterConfigs, Metadata's auto-creation, `--topic` at start) is first
one statement on the catalogue (`coordinator.cluster.topic_tables`), then applied to the node's
own `TopicStore`; the statement decides. Two nodes creating a name at once: the primary key
lets one insert win, the other answers TOPIC_ALREADY_EXISTS and takes the winner's topic id. A
change whose topic the catalogue no longer has (deleted elsewhere): UNKNOWN_TOPIC_OR_PARTITION;
partitions grown elsewhere to at least the count asked: INVALID_PARTITIONS.

Every other node follows: a trigger announces each change by NOTIFY on `TOPICS_CHANNEL`, which
starts a sync at once; a sync also runs every poll interval (the lease renewal interval,
`cluster.lease.renew.ms`), because a notification reaches only connected listeners. A sync
reads the catalogue's version and, only if it moved, the whole catalogue, and makes the local
store agree: a topic new to the node gets its local logs then, empty (as a new Kafka replica's
come up empty: the record data of a topic stays per node); a grown one its new partitions;
changed configs are stored; a local topic the catalogue does not have with that id is removed
and announced deleted (the group coordinator drops its committed offsets), as Kafka removes a
stray log. Metadata, DeleteTopics and CreatePartitions asking for a name or id the node has not
heard of yet look it up in the catalogue (`find`) before answering it unknown.

At start, before the first sync, the node's own topics that the catalogue has never seen (a
data dir from a single node) are added to it with their ids, unless deleted meanwhile
(`deleted_topics`) or their name is now taken: then they are strays and removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from coordinator.cluster.connection import connect, one_line, redacted, stop_tasks_then_close
from coordinator.cluster.schema import ensure_tables
from coordinator.cluster.topic_tables import (
    COLUMNS,
    TOPICS_CHANNEL,
    CatalogueTopic,
    collision_key,
    configs_json,
)
from coordinator.errors import ClusterError
from coordinator.node.contract import Broker
from coordinator.node.topic_admin import (
    CatalogueUnavailableError,
    LocalTopicAdmin,
    PartitionCountError,
    TopicCollisionError,
    TopicExistsError,
    UnknownTopicError,
)
from coordinator.partition_log.topics import Topic, TopicStore

log = logging.getLogger("coordinator.cluster.topics")

CREATE_ATTEMPTS = 5
"""A create that conflicts with a row deleted before it could be read tries again this often."""


def _unknown(name: str) -> UnknownTopicError:
    return UnknownTopicError(f"The topic '{name}' does not exist.")


class TopicCatalogue:
    """The node's `TopicAdmin` in cluster mode, and the task that keeps its store following."""

    def __init__(self, url: str, store: TopicStore, *, poll_s: float, node_id: int) -> None:
        self.url, self.store, self.poll_s = url, store, poll_s
        self.session_name = f"rebalance topics {node_id}"
        self._connection: Any = None
        self._listener: Any = None
        self._lock = asyncio.Lock()  # one statement and its local change at a time
        self._wake = asyncio.Event()
        self._version: int | None = None  # the catalogue version the store agrees with
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False
        self._failing = False

    # -- life -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect (`ClusterError` in one line), migrate the schema, adopt this node's own
        topics, sync, and follow from then on."""
        self._connection = await connect(self.url, application_name=self.session_name)
        try:
            await ensure_tables(self._connection, redacted(self.url))
            await self._listen()  # before the first sync: no change falls between the two
            await self._adopt_own_topics()
            await self.sync()
        except BaseException:
            await self.close()
            raise
        self._tasks.append(asyncio.create_task(self._follow(), name="topic catalogue"))

    async def close(self) -> None:
        self._stopped = True
        await stop_tasks_then_close(self._tasks, (self._connection, self._listener))
        self._connection = self._listener = None

    async def _follow(self) -> None:
        while not self._stopped:
            if self._listener is None or self._listener.closed:
                await self._listen()
            with contextlib.suppress(TimeoutError):  # 3.11's wait_for can lose close()'s cancel
                async with asyncio.timeout(self.poll_s):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.sync()
            except CatalogueUnavailableError as exc:
                if not self._failing:
                    log.warning("topic catalogue out of reach (%s); trying again", exc)
                self._failing = True
            except Exception:
                log.exception("a topic catalogue sync failed")
                self._version = None
            else:
                self._failing = False

    async def _listen(self) -> None:
        try:
            self._listener = await connect(self.url, application_name=self.session_name)
            await self._listener.execute(f"LISTEN {TOPICS_CHANNEL}")
        except Exception as exc:  # polling goes on; the next round listens again
            log.debug("topic catalogue listener not connected: %s", one_line(exc))
            self._listener = None
            return
        self._tasks.append(asyncio.create_task(self._notifications(self._listener)))

    async def _notifications(self, listener: Any) -> None:
        with contextlib.suppress(Exception):  # a lost listener: polling goes on, then listens
            async for _ in listener.notifies():
                self._wake.set()
        with contextlib.suppress(Exception):
            await listener.close()

    # -- statements -------------------------------------------------------------------------
    async def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit) and its rows; `CatalogueUnavailableError` if the
        server cannot be reached (the next statement connects again)."""
        try:
            if self._connection is None or self._connection.closed:
                self._connection = await connect(self.url, application_name=self.session_name)
            cursor = await self._connection.execute(sql, params)
            return list(await cursor.fetchall()) if cursor.description else []
        except ClusterError as exc:
            raise CatalogueUnavailableError(str(exc)) from exc
        except Exception as exc:
            if not type(exc).__module__.startswith("psycopg"):
                raise
            broken, self._connection = self._connection, None
            if broken is not None:
                with contextlib.suppress(Exception):
                    await broken.close()
            raise CatalogueUnavailableError(
                f"the cluster's topic catalogue at {redacted(self.url)}: {one_line(exc)}"
            ) from exc

    async def _row(self, sql: str, params: Sequence[object]) -> CatalogueTopic | None:
        rows = await self._rows(sql, params)
        return CatalogueTopic.of(rows[0]) if rows else None

    # -- the TopicAdmin protocol ------------------------------------------------------------
    async def create(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        new: bool = False,
    ) -> Topic:
        wanted = dict(configs or {})
        gone: list[str] = []
        try:
            async with self._lock:
                for _ in range(CREATE_ATTEMPTS):
                    made = await self._row(
                        f"INSERT INTO topics ({COLUMNS}, collision_key)"
                        f" VALUES (%s, %s, %s, %s::jsonb, %s) ON CONFLICT DO NOTHING"
                        f" RETURNING {COLUMNS}",
                        (name, uuid.uuid4(), partitions, configs_json(wanted),
                         collision_key(name)),
                    )  # fmt: skip
                    if made is not None:
                        return self._agree(made, gone)
                    found = await self._row(
                        f"SELECT {COLUMNS} FROM topics WHERE name = %s OR collision_key = %s"
                        " ORDER BY name = %s DESC LIMIT 1",
                        (name, collision_key(name), name),
                    )
                    if found is None:
                        continue  # deleted between the two statements
                    if found.name != name:
                        raise TopicCollisionError(name, found.name)
                    existing = self._agree(found, gone)
                    if new:
                        raise TopicExistsError(f"Topic '{name}' already exists.")
                    return existing
                raise CatalogueUnavailableError(f"topic {name}: created and deleted meanwhile")
        finally:
            await self._announce(gone)

    async def delete(self, topic: Topic) -> None:
        async with self._lock:
            rows = await self._rows(
                "WITH gone AS (DELETE FROM topics WHERE topic_id = %s RETURNING topic_id, name)"
                " INSERT INTO deleted_topics (topic_id, name) SELECT topic_id, name FROM gone"
                " ON CONFLICT DO NOTHING RETURNING topic_id",
                (topic.topic_id,),
            )
            self._remove(topic)
        if not rows:  # deleted elsewhere first: this node's copy was stale, and it forgets it
            await self._announce([topic.name])
            raise _unknown(topic.name)

    async def add_partitions(self, topic: Topic, total: int) -> None:
        gone: list[str] = []
        try:
            async with self._lock:
                grown = await self._row(
                    f"UPDATE topics SET partitions = %s, changed_at = clock_timestamp()"
                    f" WHERE topic_id = %s AND partitions < %s RETURNING {COLUMNS}",
                    (total, topic.topic_id, total),
                )
                if grown is not None:
                    self._agree(grown, gone)
                    return
                found = await self._row(
                    f"SELECT {COLUMNS} FROM topics WHERE topic_id = %s", (topic.topic_id,)
                )
                if found is None:
                    gone.append(self._remove(topic))
                    raise _unknown(topic.name)
                self._agree(found, gone)
                raise PartitionCountError(found.partitions, total)
        finally:
            await self._announce(gone)

    async def set_configs(self, topic: Topic, configs: Mapping[str, str]) -> None:
        gone: list[str] = []
        try:
            async with self._lock:
                changed = await self._row(
                    f"UPDATE topics SET configs = %s::jsonb, changed_at = clock_timestamp()"
                    f" WHERE topic_id = %s RETURNING {COLUMNS}",
                    (configs_json(configs), topic.topic_id),
                )
                if changed is None:
                    gone.append(self._remove(topic))
                    raise _unknown(topic.name)
                self._agree(changed, gone)
        finally:
            await self._announce(gone)

    async def find(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        gone: list[str] = []
        try:
            async with self._lock:
                where, key = ("name", name) if name is not None else ("topic_id", topic_id)
                found = await self._row(f"SELECT {COLUMNS} FROM topics WHERE {where} = %s", (key,))
                return None if found is None else self._agree(found, gone)
        except CatalogueUnavailableError:
            return None  # answered from what the node knows
        finally:
            await self._announce(gone)

    # -- following --------------------------------------------------------------------------
    async def sync(self) -> None:
        """Make the store agree with the catalogue, if its version moved since the last sync."""
        gone: list[str] = []
        try:
            async with self._lock:
                (version,) = (await self._rows("SELECT version FROM topic_catalogue_version"))[0]
                if version == self._version:
                    return
                rows = await self._rows(
                    f"SELECT v.version, {', '.join('t.' + c for c in COLUMNS.split(', '))}"
                    " FROM topic_catalogue_version AS v LEFT JOIN topics AS t ON true"
                )
                catalogue = [CatalogueTopic.of(r[1:]) for r in rows if r[1] is not None]
                self._version = None  # until every topic agreed
                by_name = {t.name: t for t in catalogue}
                for local in list(self.store):
                    wanted = by_name.get(local.name)
                    if wanted is None or wanted.topic_id != local.topic_id:
                        log.info(
                            "topic %s (id %s) is not in the cluster's catalogue (deleted, or "
                            "made again, on another node): its local copy is removed",
                            local.name, local.topic_id,
                        )  # fmt: skip
                        gone.append(self._remove(local))
                agreed = True
                for wanted in catalogue:
                    try:
                        self._agree(wanted, gone)
                    except OSError as exc:  # disk full: this topic agrees at a later sync
                        log.error("topic %s cannot be made on this node: %s", wanted.name, exc)
                        agreed = False
                if agreed:
                    self._version = int(rows[0][0])
        finally:
            await self._announce(gone)

    def _agree(self, wanted: CatalogueTopic, gone: list[str]) -> Topic:
        """This node's copy of `wanted`, made, grown or reconfigured as the catalogue has it
        (a stale copy under the same name but another id is removed, its name put in `gone`)."""
        local = self.store.get(wanted.name)
        if local is not None and local.topic_id != wanted.topic_id:
            gone.append(self._remove(local))
            local = None
        if local is None:
            log.debug("topic %s (id %s, %d partitions) from the cluster's catalogue",
                     wanted.name, wanted.topic_id, wanted.partitions)  # fmt: skip
            return self.store.create(
                wanted.name, wanted.partitions, wanted.configs, topic_id=wanted.topic_id
            )
        if wanted.partitions > len(local.partitions):
            self.store.add_partitions(local, wanted.partitions)
        if dict(wanted.configs) != local.configs:
            self.store.set_configs(local, wanted.configs)
        return local

    def _remove(self, topic: Topic) -> str:
        if self.store.get(topic.name) is topic:
            self.store.delete(topic)
        return topic.name

    async def _announce(self, names: list[str]) -> None:
        """Tell the node's services that topics are gone (outside the lock: the group
        coordinator writes tombstones there)."""
        if names:
            await self.store.announce_deleted(sorted(set(names)))

    async def _adopt_own_topics(self) -> None:
        for local in list(self.store):
            added = await self._rows(
                f"INSERT INTO topics ({COLUMNS}, collision_key)"
                " SELECT %s, %s, %s, %s::jsonb, %s"
                " WHERE NOT EXISTS (SELECT 1 FROM deleted_topics WHERE topic_id = %s)"
                " ON CONFLICT DO NOTHING RETURNING topic_id",
                (local.name, local.topic_id, len(local.partitions), configs_json(local.configs),
                 collision_key(local.name), local.topic_id),
            )  # fmt: skip
            if added:
                log.info("topic %s (id %s) of this node's data dir joins the cluster's catalogue",
                         local.name, local.topic_id)  # fmt: skip


class ClusterTopicsExtension:
    """Puts a `TopicCatalogue` on the broker as its `topic_admin`. `ClusterExtension` enters it
    once the node is registered (a refused start touches no topic) and before the group
    coordinator (whose core starts from the cluster's topics)."""

    def __init__(self, url: str, poll_s: Callable[[], float]) -> None:
        self.url = url
        self.poll_s = poll_s
        self.catalogue: TopicCatalogue | None = None

    @asynccontextmanager
    async def __call__(self, broker: Broker) -> AsyncIterator[TopicCatalogue]:
        catalogue = TopicCatalogue(
            self.url, broker.topics, poll_s=self.poll_s(), node_id=broker.node_id
        )
        await catalogue.start()
        self.catalogue = catalogue
        broker.topic_admin = catalogue
        try:
            yield catalogue
        finally:
            broker.topic_admin = LocalTopicAdmin(broker.topics)
            await catalogue.close()
