"""The ZooKeeper-coordinated consumer of Kafka 0.8 (`ZookeeperConsumerConnector`), for asyncio.

    config = ZooKeeperConsumerConfig.from_properties(
        {"group.id": "billing", "zookeeper.connect": "127.0.0.1:2181"})
    async with ZooKeeperConsumer(config, {"orders": 1}) as consumer:
        batch = await consumer.getmany(timeout_ms=500)

No coordinator: every consumer registers in ZooKeeper, watches the registry and, on any change,
rebalances by itself. What it does, in 0.8.2's order (the code, where the docs differ):

1. `start()` registers `/consumers/<group>/ids/<consumer id>` (ephemeral, 0.8's JSON; an
   existing znode of an expired session of ours is waited out, ZOOKEEPER-1740), subscribes the
   session listener, a child watch on the group's ids and a data watch on
   `/brokers/topics/<topic>` of each subscribed topic (for a topic filter, a child watch on
   `/brokers/topics` that re-registers and rebalances when the allowed topics change), then
   runs a rebalance; if that fails `start()` raises `ConsumerRebalanceFailed`, as
   `createMessageStreams` throws. 0.8 has no standing watch on `/brokers/ids` at first; a
   rebalance that finds no broker subscribes to it, and from then on every broker join or
   leave rebalances (ZkClient's subscriptions are permanent: we re-arm it like the others).
2. Watches only set a flag; one task (0.8's `<consumer id>_watcher_executor`) takes the flag
   and rebalances, so a burst of events while it works collapses into one more rebalance.
3. A rebalance (`syncedRebalance`) holds the rebalance lock and makes up to
   `rebalance.max.retries` attempts. An attempt: read this consumer's subscription from its own
   znode, the brokers (none: watch `/brokers/ids` and succeed with nothing); stop the fetchers
   and drop fetched chunks, commit offsets (auto-commit), delete *all* of this consumer's owner
   znodes; read every consumer's subscription and the partitions of its topics; decide its own
   partitions (`range` or `roundrobin`, `rebalance.zookeeper.assignment`); read their offsets
   (`/consumers/<g>/offsets/<t>/<p>`, missing: -1); create each owner znode (ephemeral, the
   thread id as data) one at a time. If any already exists the attempt fails and the ones it
   created are deleted. A failed attempt (a conflict or any error) stops the fetchers, commits,
   and sleeps `rebalance.backoff.ms`; after the last one `ConsumerRebalanceFailed` is raised
   (in the watcher task it is logged and the consumer owns nothing until the next event, as in
   0.8). On success the fetchers start from the offsets read.
4. Offsets are written to ZooKeeper every `auto.commit.interval.ms`, before partitions are
   released, and at shutdown; only changed ones.
5. Session expiry: forget the owned partitions (their znodes went with the session), register
   again, rebalance. A reconnect within the session re-arms the watches and rebalances if the
   registry changed meanwhile (what ZooKeeper's re-sent watches do for 0.8's client).

Where we differ: one consumer connector runs one subscription (0.8 allows one
`createMessageStreams` call too) and its streams are not separate iterators: `getmany` returns
the records of every stream; the registry is read once per attempt (0.8.2 reads its own
subscription and the broker registry twice); the fetcher is ours (`fetcher`).

This module is longer than most here because it is one algorithm with one state: 0.8's
connector and its rebalance listener share the registration, the watches, the owned partitions
and the rebalance lock. What an attempt reads and claims is in `group_registry`, fetching in
`fetcher`, the decision in `rebalance.zookeeper.assignment`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.records.schema import Record

from assignors import AssignmentError
from coordinator.zookeeper.client import ZooKeeper, ZooKeeperError
from coordinator.zookeeper.events import ConsumerEventLog
from coordinator.zookeeper.fetcher import (
    INVALID_OFFSET,
    FetchedChunk,
    Fetcher,
    PartitionTopicInfo,
)
from coordinator.zookeeper.group_registry import GroupRegistry
from coordinator.zookeeper.recipes import create_ephemeral_expect_conflict, update_persistent
from rebalance.event_schema import EventType, ZooKeeperTrigger
from rebalance.zookeeper.assignment import ownership_decision
from rebalance.zookeeper.config import ZooKeeperConsumerConfig
from rebalance.zookeeper.formats import (
    BROKER_IDS,
    BROKER_TOPICS,
    STATIC,
    ConsumerRegistration,
    FormatError,
    consumer_path,
    consumer_registry_dir,
    encode_offset,
    offset_path,
    topic_path,
)
from rebalance.zookeeper.ids import consumer_id
from rebalance.zookeeper.topic_filter import TopicFilter

log = logging.getLogger("coordinator.zookeeper")

TopicPartition = tuple[str, int]
QUEUED_CHUNKS = 10
Subscription = Mapping[str, int] | TopicFilter
"""{topic: streams} (pattern `static`), or a whitelist/blacklist with `streams` threads."""


class ConsumerRebalanceFailed(RuntimeError):
    """`ConsumerRebalanceFailedException`: no attempt of a rebalance succeeded."""


@dataclass(frozen=True)
class RebalanceOutcome:
    """What the last rebalance of this consumer ended with (for callers and tests)."""

    succeeded: bool
    attempts: int
    assignment: dict[TopicPartition, str]
    zk_ops: int
    consumers: list[str]
    """The group's consumers as the last attempt read them."""


class ZooKeeperConsumer:
    """One consumer of a group coordinated through ZooKeeper (see the module docstring)."""

    def __init__(
        self,
        config: ZooKeeperConsumerConfig,
        subscription: Subscription,
        *,
        streams: int = 1,
        event_log: Path | None = None,
        on_rebalance: Callable[[RebalanceOutcome], None] | None = None,
    ) -> None:
        self.config = config
        self.group = config.group_id
        self.consumer_id = consumer_id(
            config.group_id, config.consumer_id, host=socket.gethostname(),
            now_ms=int(time.time() * 1000), uuid_int=uuid.uuid4().int,
        )  # fmt: skip
        if isinstance(subscription, TopicFilter):
            self._filter: TopicFilter | None = subscription
            if streams < 1:
                raise ValueError("a topic filter needs at least one stream")
            registered: tuple[tuple[str, int], ...] = ((subscription.regex, streams),)
        else:
            self._filter = None
            registered = tuple(subscription.items())
            if not registered:
                raise ValueError("subscribe to at least one topic")
        self._registration = ConsumerRegistration(
            registered,
            self._filter.pattern if self._filter is not None else STATIC,
            str(int(time.time() * 1000)),
        )
        self._on_rebalance = on_rebalance
        self._events = ConsumerEventLog(event_log, self.consumer_id) if event_log else None
        self._zk = ZooKeeper(
            config.zookeeper_connect,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connection_timeout_ms=config.connection_timeout_ms,
            on_state=self._session_state,
        )
        self._group_registry = GroupRegistry(self._zk, self.group, config.exclude_internal_topics)
        self._queue: asyncio.Queue[FetchedChunk] = asyncio.Queue(QUEUED_CHUNKS)
        self._registry: dict[TopicPartition, PartitionTopicInfo] = {}
        self._checkpointed: dict[TopicPartition, int] = {}
        self._fetcher: Fetcher | None = None
        self._rebalance_lock = asyncio.Lock()
        self._triggered = asyncio.Event()
        self._trigger: ZooKeeperTrigger | None = None
        self._watch_events = 0
        self._wildcard_topics: list[str] = []
        self._watched_topics: set[str] = set()
        #: Set once a rebalance found no broker: `/brokers/ids` is watched from then on.
        self._brokers_subscribed = False
        self._last_consumers: list[str] = []
        self._seen: dict[str, object] = {}
        self._partitions_total = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._shutting_down = False
        self._started = False
        self.last_outcome: RebalanceOutcome | None = None

    # -- life cycle ------------------------------------------------------------------------

    async def __aenter__(self) -> ZooKeeperConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Register, watch, rebalance (raises `ConsumerRebalanceFailed` if that fails)."""
        await self._zk.start()
        self._started = True
        try:
            await self._register()
            strategy = self.config.partition_assignment_strategy
            self._emit(EventType.MEMBER_JOINED, client_id=self.config.effective_client_id,
                       instance_id=None, protocols=[strategy])  # fmt: skip
            await self._reinitialize()
            self._spawn(self._watcher_executor(), "watcher-executor")
            if self.config.auto_commit_enable:
                self._spawn(self._auto_commit(), "auto-commit")
            await self.synced_rebalance(ZooKeeperTrigger.STARTED)
        except BaseException:
            await self.stop(leave=False)
            raise

    async def stop(self, *, leave: bool = True) -> None:
        """0.8's `shutdown`: stop the watcher and the auto-committer, stop fetching, commit
        (auto-commit), close the session (its ephemeral znodes go with it). Requests wait while
        ZooKeeper is unreachable, so the commit gets one session timeout at most."""
        if self._shutting_down:
            return
        self._shutting_down = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        async with self._rebalance_lock:
            await self._stop_fetcher()
            if self._started and self.config.auto_commit_enable:
                try:
                    async with asyncio.timeout(self.config.zookeeper_session_timeout_ms / 1000):
                        await self._commit_quietly()
                except TimeoutError:
                    log.warning("%s: no offset commit at shutdown: ZooKeeper unreachable",
                                self.consumer_id)  # fmt: skip
            if leave and self._started:
                self._emit(EventType.MEMBER_LEFT, reason="leave")
            await self._zk.close()
        if self._events is not None:
            self._events.close()

    # -- what the application uses -------------------------------------------------------

    @property
    def assignment(self) -> dict[TopicPartition, str]:
        """The partitions this consumer owns now, with the owning thread id."""
        return {tp: info.thread for tp, info in self._registry.items()}

    @property
    def zk_ops(self) -> int:
        """ZooKeeper requests this consumer has sent so far."""
        return self._zk.ops

    async def getmany(self, timeout_ms: int = 0) -> dict[TopicPartition, list[Record]]:
        """Records fetched for the owned partitions (waits up to `timeout_ms` for the first);
        returning them counts as consuming them (0.8's iterator advances the consumed offset)."""
        batches: dict[TopicPartition, list[Record]] = {}
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                chunk = await self._queue.get()
        except TimeoutError:
            return batches
        while True:
            self._consume(chunk, batches)
            try:
                chunk = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return batches

    def _consume(self, chunk: FetchedChunk, into: dict[TopicPartition, list[Record]]) -> None:
        tp = (chunk.topic, chunk.partition)
        info = self._registry.get(tp)
        if info is None or self._fetcher is None or chunk.fetcher != self._fetcher.id:
            return  # fetched before a rebalance: another consumer may own it now
        records = [r for r in chunk.records if r.offset >= info.consumed_offset]
        if records:
            into.setdefault(tp, []).extend(records)
            info.consumed_offset = int(records[-1].offset) + 1

    async def commit(self) -> int:
        """Write the changed consumed offsets to ZooKeeper; returns how many were written."""
        written = 0
        for tp, info in list(self._registry.items()):
            offset = info.consumed_offset
            if offset == INVALID_OFFSET or self._checkpointed.get(tp) == offset:
                continue
            await update_persistent(self._zk, offset_path(self.group, *tp), encode_offset(offset))
            self._checkpointed[tp] = offset
            written += 1
        if written:
            self._emit(EventType.OFFSET_COMMIT, partitions=written)
        return written

    async def _commit_quietly(self) -> None:
        """Commit, logging a failure (0.8 logs commit errors and goes on)."""
        try:
            await self.commit()
        except ZooKeeperError as exc:
            log.warning("%s: offset commit failed: %s", self.consumer_id, exc)

    async def _auto_commit(self) -> None:
        while True:
            await asyncio.sleep(self.config.auto_commit_interval_ms / 1000)
            await self._commit_quietly()

    # -- registration and watches --------------------------------------------------------

    async def _register(self) -> None:
        """`registerConsumerInZK`: any znode at our path is ours from an earlier session."""
        await create_ephemeral_expect_conflict(
            self._zk,
            consumer_path(self.group, self.consumer_id),
            self._registration.encode(),
            lambda _data: True,
            self.config.zookeeper_session_timeout_ms / 1000,
        )
        log.info("registered consumer %s", self.consumer_id)

    async def _reinitialize(self) -> None:
        """`reinitializeConsumer`'s watches: the group's ids, each topic's partitions (and, for
        a topic filter, the topic list)."""
        self._seen["ids"] = await self._zk.children(
            consumer_registry_dir(self.group), self._consumers_changed
        )
        if self._filter is not None:
            self._wildcard_topics = await self._allowed_topics()
        for topic in self._subscribed_topics():
            await self._watch_topic(topic)
        if self._brokers_subscribed:
            await self._watch_brokers()

    async def _watch_brokers(self) -> None:
        """0.8's `subscribeChildChanges(BrokerIdsPath, loadBalancerListener)`: once made, it
        stays for the connector's life."""
        self._brokers_subscribed = True
        self._seen["brokers"] = await self._zk.children(BROKER_IDS, self._brokers_changed)

    def _subscribed_topics(self) -> list[str]:
        if self._filter is not None:
            return list(self._wildcard_topics)
        return [name for name, _ in self._registration.subscription]

    async def _watch_topic(self, topic: str) -> None:
        stored = await self._zk.get_or_none(topic_path(topic), self._topic_changed)
        self._seen[topic] = stored[1].modified_zxid if stored else None
        self._watched_topics.add(topic)

    async def _allowed_topics(self) -> list[str]:
        assert self._filter is not None
        names = await self._zk.children(BROKER_TOPICS, self._topic_list_changed)
        return sorted(
            t for t in names if self._filter.allows(t, self.config.exclude_internal_topics)
        )

    def _consumers_changed(self, _kind: str, path: str) -> None:
        self._rearm(lambda: self._zk.children(path, self._consumers_changed), "ids")
        self.trigger(ZooKeeperTrigger.CONSUMERS_CHANGED)

    def _topic_changed(self, kind: str, path: str) -> None:
        topic = path.rpartition("/")[2]
        if kind == "deleted":
            log.warning("Topic for path %s gets deleted, which should not happen at this time",
                        path)  # fmt: skip
        self._rearm(lambda: self._zk.get_or_none(path, self._topic_changed), topic)
        self.trigger(ZooKeeperTrigger.TOPIC_CHANGED)

    def _brokers_changed(self, _kind: str, path: str) -> None:
        self._rearm(lambda: self._zk.children(path, self._brokers_changed), "brokers")
        self.trigger(ZooKeeperTrigger.BROKERS_CHANGED)

    def _topic_list_changed(self, _kind: str, _path: str) -> None:
        self._spawn(self._handle_topic_event(), "topic-event")

    async def _handle_topic_event(self) -> None:
        """`WildcardStreamsHandler.handleTopicEvent`: re-register and rebalance when the set of
        allowed topics changed."""
        updated = await self._allowed_topics()
        if updated != self._wildcard_topics:
            added = sorted(set(updated) - set(self._wildcard_topics))
            deleted = sorted(set(self._wildcard_topics) - set(updated))
            log.info("Topic event: added topics = %s, deleted topics = %s", added, deleted)
            self._wildcard_topics = updated
            for topic in updated:
                if topic not in self._watched_topics:
                    await self._watch_topic(topic)
            self.trigger(ZooKeeperTrigger.TOPICS_CHANGED)

    def _rearm(self, read: Callable[[], Awaitable[Any]], key: str) -> None:
        """Watches are one-shot: read again with the watch, as ZkClient does on every event.

        The read starts inside the task: a task cancelled before it runs (at shutdown) must not
        leave a read coroutine that was never awaited."""

        async def rearm() -> None:
            result = await read()
            if key in ("ids", "brokers"):  # children
                self._seen[key] = result
            else:
                self._seen[key] = result[1].modified_zxid if result else None

        self._spawn(rearm(), "rearm")

    def trigger(self, reason: ZooKeeperTrigger) -> None:
        """`rebalanceEventTriggered`: set the flag; the watcher task rebalances."""
        if self._shutting_down:
            return
        self._watch_events += 1
        if self._trigger is None:
            self._trigger = reason
        self._triggered.set()

    async def _watcher_executor(self) -> None:
        while True:
            await self._triggered.wait()
            self._triggered.clear()
            reason = self._trigger or ZooKeeperTrigger.CONSUMERS_CHANGED
            self._trigger = None
            try:
                await self.synced_rebalance(reason)
            except ConsumerRebalanceFailed as exc:
                log.error("error during syncedRebalance: %s", exc)
            except Exception:  # 0.8 logs and keeps its watcher thread alive
                log.exception("error during syncedRebalance")

    # -- session -------------------------------------------------------------------------

    def _session_state(self, state: str, new_session: bool) -> None:
        if self._shutting_down or not self._started:
            return
        if state == "connected" and new_session:
            self._spawn(self._handle_new_session(), "new-session")
        elif state == "connected":
            self._spawn(self._resync_watches(), "resync")

    async def _handle_new_session(self) -> None:
        """`ZKSessionExpireListener.handleNewSession`: forget the partitions (their owner
        znodes went with the session), register again, rebalance. Like 0.8 it does not wait for
        a rebalance in progress: that one's next attempt finds the registration back."""
        log.info("ZK expired; release old broker partition ownership; re-register consumer %s",
                 self.consumer_id)  # fmt: skip
        self._emit(EventType.ZK_SESSION_EXPIRED)
        self._registry.clear()  # resetState; chunks still fetched for them are dropped
        await self._register()
        await self._reinitialize()
        self.trigger(ZooKeeperTrigger.SESSION_EXPIRED)

    async def _resync_watches(self) -> None:
        """Re-arm the watches kazoo dropped on a disconnect; what changed meanwhile triggers a
        rebalance (ZooKeeper re-sends watches to 0.8's client on reconnection)."""
        before = dict(self._seen)
        await self._reinitialize()
        if any(self._seen.get(key) != value for key, value in before.items()):
            self.trigger(ZooKeeperTrigger.CONSUMERS_CHANGED)

    # -- the rebalance ---------------------------------------------------------------------

    async def synced_rebalance(self, trigger: ZooKeeperTrigger) -> RebalanceOutcome | None:
        """Up to `rebalance.max.retries` attempts; raises `ConsumerRebalanceFailed`."""
        async with self._rebalance_lock:
            if self._shutting_down:
                return None
            ops_before = self._zk.ops
            folded, self._watch_events = self._watch_events, 0
            self._emit(EventType.REBALANCE_STARTED, trigger=trigger,
                       members=len(self._last_consumers), watch_events=folded)  # fmt: skip
            backoff = self.config.backoff_ms
            retries = self.config.rebalance_max_retries
            for attempt in range(1, retries + 1):
                if self._shutting_down:
                    return None
                log.info("begin rebalancing consumer %s try #%d", self.consumer_id, attempt - 1)
                try:
                    done, reason = await self._rebalance(attempt)
                except (ZooKeeperError, FormatError, AssignmentError, ValueError) as exc:
                    done, reason = False, f"{type(exc).__name__}: {exc}"
                    log.info("exception during rebalance: %s", reason)
                if done:
                    outcome = RebalanceOutcome(True, attempt, self.assignment,
                                               self._zk.ops - ops_before,
                                               list(self._last_consumers))  # fmt: skip
                    self._emit(EventType.ZK_REBALANCE_COMPLETED, attempt=attempt,
                               assignments={self.consumer_id: _as_entries(self.assignment)},
                               consumers=self._last_consumers,
                               partitions_total=self._partitions_total,
                               strategy=self.config.partition_assignment_strategy,
                               zk_ops=outcome.zk_ops)  # fmt: skip
                    self._finish(outcome)
                    return outcome
                await self._stop_fetcher()
                if self.config.auto_commit_enable:
                    await self._commit_quietly()
                if attempt < retries:
                    self._emit(EventType.ZK_REBALANCE_RETRY, attempt=attempt, backoff_ms=backoff,
                               reason=reason)  # fmt: skip
                await asyncio.sleep(backoff / 1000)
            outcome = RebalanceOutcome(
                False, retries, {}, self._zk.ops - ops_before, list(self._last_consumers)
            )
            self._emit(EventType.ZK_REBALANCE_FAILED, attempt=retries, zk_ops=outcome.zk_ops)
            self._finish(outcome)
            raise ConsumerRebalanceFailed(
                f"{self.consumer_id} can't rebalance after {retries} retries"
            )

    def _finish(self, outcome: RebalanceOutcome) -> None:
        self.last_outcome = outcome
        if self._on_rebalance is not None:
            self._on_rebalance(outcome)

    async def _rebalance(self, attempt: int) -> tuple[bool, str]:
        """One attempt; (succeeded, why not)."""
        registry = self._group_registry
        mine = await registry.subscription_of(self.consumer_id)
        brokers = await registry.brokers()
        if not brokers:
            log.warning("no brokers found when trying to rebalance.")
            await self._watch_brokers()
            return True, ""
        await self._stop_fetcher()
        if self.config.auto_commit_enable:
            await self._commit_quietly()
        await registry.release(list(self._registry))
        self._registry = {}
        read = await registry.read_group(mine, self._consumers_changed, self._topic_changed)
        self._seen.update(read.seen)
        self._last_consumers = read.consumers
        self._partitions_total = read.partitions_total
        decision = ownership_decision(
            self.config.partition_assignment_strategy, self.consumer_id, read.view
        )
        offsets = {tp: await registry.offset(tp) for tp in sorted(decision)}
        if self._shutting_down:
            return False, "shutting down"
        claimed, conflicts = await registry.claim(decision)
        if conflicts:
            listed = [list(tp) for tp in conflicts]
            self._emit(EventType.ZK_CLAIMS_FAILED, attempt=attempt, conflicts=listed,
                       rolled_back=len(claimed))  # fmt: skip
            return False, "claims_failed"
        self._registry = {
            tp: PartitionTopicInfo(tp[0], tp[1], thread, offsets[tp], offsets[tp])
            for tp, thread in sorted(decision.items())
        }
        self._checkpointed = dict(offsets)
        self._fetcher = Fetcher(self.config, registry.brokers, self._registry, self._queue)
        self._fetcher.start()
        log.info("Consumer %s selected partitions : %s", self.consumer_id, sorted(decision))
        return True, ""

    async def _stop_fetcher(self) -> None:
        """Stop fetching and drop what was fetched and not yet returned (0.8 clears queues)."""
        if self._fetcher is not None:
            await self._fetcher.stop()
            self._fetcher = None
        while not self._queue.empty():
            self._queue.get_nowait()

    # -- plumbing --------------------------------------------------------------------------

    def _emit(self, event_type: EventType, **fields: Any) -> None:
        if self._events is not None:
            self._events.emit(event_type, self.group, self.consumer_id, **fields)

    def _spawn(self, work: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=f"{self.consumer_id} {name}")
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None and not self._shutting_down:
            log.warning("%s: %s failed: %r", self.consumer_id, task.get_name(), error)


def _as_entries(assignment: Mapping[TopicPartition, str]) -> list[list[Any]]:
    """[[topic, [partitions]]] as the event log writes assignments."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(assignment):
        by_topic.setdefault(topic, []).append(partition)
    return [[topic, partitions] for topic, partitions in by_topic.items()]
