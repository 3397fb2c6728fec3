"""`ClientBalanceConsumer`: TubeMQ's client-balance consumer over this coordinator's wire APIs.

The 17 operations of TubeMQ's `ClientBalanceConsumer` (spec §D.2) in Pythonic form; the table in
docs/client-balance.md maps them one by one. A node:

1. `start(topics, source_count, node_id)` joins the group (ClientBalanceHeartbeat, epoch 0),
   retrying as TubeMQ does (`register_retries` times, `register_fail_wait_ms` apart: a node id
   still held by a node whose session has not run out yet is refused with 430 until then), and
   starts heartbeating with the partitions it holds;
2. `partition_meta()` gives every partition key of its topics and whether it is subscribable
   (Metadata: a partition with a leader), asking at most once per `meta_check_interval_ms`;
3. `connect(key, bootstrap_offset)` / `disconnect(key)` register and release one partition;
4. `get_message()` returns one batch of one idle partition, `confirm(context, consumed)` ends
   it: consumed moves the partition on and commits (OffsetCommit, fenced by the registration),
   not consumed makes the same records come again;
5. `shutdown()` releases everything and leaves.

Two observations of spec §D.9 are not repeated: `partitions_ready(max_wait_ms)` waits up to
`max_wait_ms` (TubeMQ's loop condition returned after one sleep), and the metadata interval's
minimum (5000 ms) is enforced (TubeMQ's setter clamped, then overwrote the clamp).

The node's settings are `config`, its connections `connections` (one to the coordinator, one per
partition leader), its requests to the coordinator `requests`, its fetches `fetching`, what it
holds of each partition `partitions`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable, Sequence
from typing import Final

from coordinator.clients.client_balance import requests
from coordinator.clients.client_balance.config import CLIENT_VERSION, UNDEFINED, ClientBalanceConfig
from coordinator.clients.client_balance.connections import Connections
from coordinator.clients.client_balance.errors import ClientBalanceError, ClientCode
from coordinator.clients.client_balance.fetching import fetch, reset_offset
from coordinator.clients.client_balance.holdings import Holdings
from coordinator.clients.client_balance.partitions import (
    ConsumeResult,
    OffsetInfo,
    PartitionState,
    parse_key,
)
from coordinator.wire import client_balance_schema as schema
from coordinator.wire.client import WireClient
from rebalance.errors import ErrorCode

log = logging.getLogger("coordinator.client_balance")

#: Errors after which `start` tries again: the group may accept the node a moment later (its
#: node id held by a node whose session is about to run out; the coordinator loading).
_RETRIABLE_JOIN: Final = frozenset(
    {
        ErrorCode.CLIENT_DUPLICATE_INDEXID,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


class ClientBalanceConsumer:
    """One node of a client-balance group; see the module docstring."""

    def __init__(self, config: ClientBalanceConfig) -> None:
        schema.register_with_codec()
        self.config = config
        self._consumer_id = f"{config.client_id}-{uuid.uuid4()}"
        self._status = 0  # TubeMQ's: 0 not started, 1 starting, 2 started, 3 stopping
        self._topics: tuple[str, ...] = ()
        self._source_count = UNDEFINED
        self._node_id = UNDEFINED
        self._sent_source_count = -1
        self._sent_node_id = -1
        self._epoch = 0
        self._interval_s = config.session_timeout_ms / 3000
        self._connections = Connections(config)
        self._leaders: dict[int, tuple[str, int]] = {}
        self._held = Holdings()
        self._occupied_at: dict[str, float] = {}
        #: (topic, partition) with a register or release on its way: a heartbeat's answer
        #: may predate it, so the resynchronisation leaves these alone.
        self._in_flight: set[tuple[str, int]] = set()
        self._meta: dict[str, bool] = {}
        self._meta_at: float | None = None
        self._heartbeats: asyncio.Task[None] | None = None

    # ======================================================================== getters
    @property
    def client_version(self) -> str:
        return CLIENT_VERSION

    @property
    def consumer_id(self) -> str:
        """The member id this node joins with (TubeMQ's generated consumer id)."""
        return self._consumer_id

    @property
    def is_shutdown(self) -> bool:
        return self._status not in (1, 2)

    def is_filter_consume(self, topic: str) -> bool:
        """Always False: Kafka topics have no filter conditions (docs/client-balance.md)."""
        return False

    @property
    def source_count(self) -> int:
        """As given to `start`; -2 when that was ≤ 0 (the checks are off)."""
        return self._source_count

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def member_epoch(self) -> int:
        return self._epoch

    # ========================================================================== start
    async def start(self, topics: Iterable[str], source_count: int, node_id: int) -> None:
        """Join the group and start heartbeating. Raises `ClientBalanceError`: BAD_REQUEST for
        no topics or a node id outside [0, source_count - 1] (when source_count > 0); the
        group's refusal (424, 425, 429, 430) once the retries are spent."""
        topics = tuple(sorted(set(topics)))
        if not topics:
            raise ClientBalanceError(ErrorCode.BAD_REQUEST, "no topics to consume")
        if source_count > 0 and not 0 <= node_id < source_count:
            raise ClientBalanceError(
                ErrorCode.BAD_REQUEST,
                f"nodeId {node_id} outside [0, {source_count - 1}] (sourceCount {source_count})",
            )
        if self._status != 0:
            raise ClientBalanceError(ErrorCode.BAD_REQUEST, "the consumer is already started")
        self._status = 1
        self._topics = topics
        self._sent_source_count, self._sent_node_id = source_count, node_id
        if source_count > 0:
            self._source_count, self._node_id = source_count, node_id
        try:
            await self._join_with_retries()
        except BaseException:
            self._status = 0
            await self._connections.close()
            raise
        self._status = 2
        self._heartbeats = asyncio.create_task(self._heartbeat_loop(), name="cb-heartbeat")

    async def _join_with_retries(self) -> None:
        attempts = max(1, self.config.register_retries)
        for attempt in range(1, attempts + 1):
            try:
                await self._join()
                return
            except (ClientBalanceError, OSError, asyncio.IncompleteReadError) as exc:
                code = getattr(exc, "code", None)
                final = attempt == attempts or (code is not None and code not in _RETRIABLE_JOIN)
                if final:
                    if isinstance(exc, ClientBalanceError):
                        raise
                    raise ClientBalanceError(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
                log.info("join attempt %d failed: %s", attempt, exc)
                await self._connections.drop_group()
                await asyncio.sleep(self.config.register_fail_wait_ms / 1000)

    async def _join(self) -> None:
        self._epoch, self._interval_s = await requests.join(
            self._connections,
            self._consumer_id,
            self._sent_source_count,
            self._sent_node_id,
            self._topics,
        )

    # ====================================================================== heartbeat
    async def _heartbeat_loop(self) -> None:
        while self._status == 2:
            await asyncio.sleep(self._interval_s)
            if self._status != 2:
                return
            try:
                await self._heartbeat()
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                log.warning("heartbeat failed: %s", exc)
                await self._connections.drop_group()
            except ClientBalanceError as exc:
                log.warning("heartbeat refused: %s", exc)

    async def _heartbeat(self) -> None:
        reported = {(part.topic, part.partition) for part in self._held.parts.values()}
        response = await requests.heartbeat(
            self._connections, self._consumer_id, self._epoch, reported
        )
        code = int(response.error_code)
        if code == ErrorCode.HB_NO_NODE:
            # Our session ran out: our partitions are free for others. Start over as a new
            # incarnation, holding nothing (TubeMQ's client re-registers the same way).
            log.warning("the coordinator no longer knows this node; joining again")
            self._held.drop_all()
            await self._join_with_retries()
            return
        requests.check(code, response.error_message)
        await self._resynchronise(
            reported, {(h.topic, int(p)) for h in response.held for p in h.partitions}
        )

    async def _resynchronise(
        self, reported: set[tuple[str, int]], booked: set[tuple[str, int]]
    ) -> None:
        """Agree with the coordinator's book (the heartbeat's answer; the coordinator never
        applies our report): drop what we reported and it no longer records as ours, release
        what it records and we do not hold (a register whose answer never came). Partitions
        registered or released since the report are left alone: the answer may predate them."""
        held = {(part.topic, part.partition): key for key, part in self._held.parts.items()}
        for tp in sorted((reported & held.keys()) - booked - self._in_flight):
            log.warning("the coordinator no longer records %s as ours: dropped", held[tp])
            self._held.drop(held[tp])
        for topic, partition in sorted(booked - held.keys() - self._in_flight):
            log.warning("the coordinator records %s-%d as ours: released", topic, partition)
            await self._release(topic, partition)

    # ======================================================================= metadata
    async def partition_meta(self, *, refresh: bool = False) -> dict[str, bool]:
        """Every partition key of the node's topics -> whether it can be consumed now. Asks the
        cluster at most once per `meta_check_interval_ms` (`refresh` forces it); registered
        partitions that became unsubscribable are released (TubeMQ does the same)."""
        self._check_running()
        now = asyncio.get_running_loop().time()
        interval = self.config.meta_check_interval_ms / 1000
        if not refresh and self._meta_at is not None and now - self._meta_at < interval:
            return dict(self._meta)
        self._leaders, meta = await requests.metadata(self._connections, self._topics)
        self._meta, self._meta_at = meta, now
        for key in [k for k in self._held.parts if not meta.get(k, False)]:
            await self.disconnect(key)
        return dict(meta)

    # ===================================================================== partitions
    def registered(self) -> set[str]:
        """TubeMQ's `getCurRegisteredPartSet`."""
        return set(self._held.parts)

    async def partitions_ready(self, max_wait_ms: int) -> bool:
        """True once at least one partition is registered, waiting up to `max_wait_ms` for it
        (TubeMQ's version returned after one ~250 ms sleep: spec §D.9)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while not self._held.parts:
            remaining = deadline - loop.time()
            if remaining <= 0 or self.is_shutdown:
                return bool(self._held.parts)
            await self._held.wait_changed(remaining)
        return True

    async def connect(self, key: str, bootstrap_offset: int = -1) -> int:
        """Register partition `key`, starting from `bootstrap_offset` when ≥ 0 (it replaces
        the committed offset), else from the committed offset (or `auto_offset_reset` when
        there is none). Returns the offset consumption starts from. Raises
        `ClientBalanceError`: PARTITION_OCCUPIED (with the holder) while another live node
        holds it, CLIENT_HIGH_FREQUENCY_REQUEST within `occupied_retry_backoff_ms` of such a
        refusal, NOT_FOUND (404) for a key the metadata does not list, PARTITION_UNSUBSCRIBABLE
        (422) for one it lists as not consumable now (as TubeMQ's client)."""
        self._check_running()
        existing = self._held.parts.get(key)
        if existing is not None:
            return existing.position
        loop = asyncio.get_running_loop()
        refused = self._occupied_at.get(key)
        backoff = self.config.occupied_retry_backoff_ms / 1000
        if refused is not None and loop.time() - refused < backoff:
            raise ClientBalanceError(
                ClientCode.CLIENT_HIGH_FREQUENCY_REQUEST,
                f"{key} was occupied {loop.time() - refused:.1f} s ago",
            )
        meta = self._meta if key in self._meta else await self.partition_meta(refresh=True)
        if key not in meta:  # TubeMQ's RmtDataCache.getSubscribablePartition
            raise ClientBalanceError(ErrorCode.NOT_FOUND, f"{key} is not in the partition meta")
        if not meta[key]:
            raise ClientBalanceError(ErrorCode.PARTITION_UNSUBSCRIBABLE, f"{key} cannot be used")
        broker, topic, partition = parse_key(key)
        self._in_flight.add((topic, partition))
        try:
            return await self._register(key, broker, topic, partition, bootstrap_offset)
        finally:
            self._in_flight.discard((topic, partition))

    async def _register(
        self, key: str, broker: int, topic: str, partition: int, bootstrap_offset: int
    ) -> int:
        loop = asyncio.get_running_loop()
        answer = await requests.register(
            self._connections, self._consumer_id, self._epoch, topic, partition, bootstrap_offset
        )
        code = int(answer.error_code)
        if code == ErrorCode.PARTITION_OCCUPIED:
            self._occupied_at[key] = loop.time()
            raise ClientBalanceError(code, f"{key} is held by {answer.holder}")
        requests.check(code, key)
        self._occupied_at.pop(key, None)
        offset = int(answer.offset)
        if offset < 0:
            offset = await reset_offset(
                self._fetcher, broker, topic, partition, self.config.auto_offset_reset
            )
        self._held.add(key, PartitionState(broker, topic, partition, offset, offset))
        return offset

    async def disconnect(self, key: str) -> None:
        """Release partition `key`: a batch handed out and not yet confirmed gets up to
        `rebalance_confirm_wait_ms` to be confirmed, then the partition is released (and the
        unconfirmed batch is not committed: it will be consumed again by the next holder)."""
        self._check_running(allow_stopping=True)
        part = self._held.parts.get(key)
        if part is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.rebalance_confirm_wait_ms / 1000
        while part.booked is not None and loop.time() < deadline and key in self._held.parts:
            await asyncio.sleep(0.02)
        self._held.drop(key)
        await self._release(part.topic, part.partition)

    async def _release(self, topic: str, partition: int) -> None:
        """Unregister at the coordinator (`requests.release`)."""
        self._in_flight.add((topic, partition))
        try:
            await requests.release(
                self._connections, self._consumer_id, self._epoch, topic, partition
            )
        finally:
            self._in_flight.discard((topic, partition))

    def offsets(self) -> dict[str, OffsetInfo]:
        """TubeMQ's `getCurPartitionOffsetInfos`."""
        return self._held.offsets()

    # ====================================================================== consuming
    async def get_message(self, max_wait_ms: int | None = None) -> ConsumeResult:
        """One batch of one idle partition (round robin), waiting up to `max_wait_ms`
        (default `consume_ready_wait_ms`). Raises `ClientBalanceError` when the wait ends:
        NO_PARTITION_ASSIGNED (nothing registered), ALL_PARTITION_INUSE (every partition has
        a batch out), ALL_PARTITION_WAITING (no new records)."""
        self._check_running()
        loop = asyncio.get_running_loop()
        wait = self.config.consume_ready_wait_ms if max_wait_ms is None else max_wait_ms
        deadline = loop.time() + wait / 1000
        while True:
            self._check_running()
            held, batch = self._held, self.config.max_batch_records
            idle = held.idle()
            for key in idle:
                if held.parts[key].buffer:
                    return held.book(key, batch)
            if idle:
                wait_ms = max(0.0, min(deadline - loop.time(), 1.0)) * 1000
                max_wait_ms = int(min(wait_ms, self.config.fetch_max_wait_ms))
                await fetch(self._fetcher, held.parts, idle, max_wait_ms)
                for key in idle:
                    fetched = held.parts.get(key)
                    if fetched is not None and fetched.booked is None and fetched.buffer:
                        return held.book(key, batch)
            if loop.time() >= deadline:
                if not held.parts:
                    raise ClientBalanceError(ClientCode.NO_PARTITION_ASSIGNED)
                if not idle:
                    raise ClientBalanceError(ClientCode.ALL_PARTITION_INUSE)
                raise ClientBalanceError(ClientCode.ALL_PARTITION_WAITING)
            if not idle:
                await held.wait_changed(min(deadline - loop.time(), 0.05) or 0.001)

    async def confirm(self, context: str, consumed: bool = True) -> int:
        """End the batch of `context`: consumed moves the partition past it and commits that
        offset (unless `confirm_in_local`); not consumed hands the same records out again.
        Returns the partition's next offset. Raises `ClientBalanceError`: FENCED_MEMBER_EPOCH
        when the partition is no longer this node's (the commit is refused; it is dropped)."""
        self._check_running()
        part = self._held.confirm(context, consumed)
        if consumed and not self.config.confirm_in_local:
            await self._commit([part])
        return part.position

    async def commit(self) -> None:
        """Commit every registered partition's position (for `confirm_in_local`)."""
        self._check_running()
        await self._commit(list(self._held.parts.values()))

    async def _commit(self, parts: Sequence[PartitionState]) -> None:
        refused = await requests.commit(self._connections, self._consumer_id, self._epoch, parts)
        if refused is not None:
            key, code = refused
            self._held.drop(key)
            raise ClientBalanceError(code, f"commit of {key} refused")

    # ======================================================================= shutdown
    async def shutdown(self) -> None:
        """Release every partition, leave the group, stop heartbeating, close connections."""
        if self._status != 2:
            await self._connections.close()
            self._status = 0
            return
        self._status = 3
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeats
        with contextlib.suppress(ClientBalanceError, OSError, asyncio.IncompleteReadError):
            for key in list(self._held.parts):
                await self.disconnect(key)
            await requests.leave(self._connections, self._consumer_id)
        self._held.drop_all()
        await self._connections.close()
        self._status = 0

    # ======================================================================== plumbing
    def _check_running(self, *, allow_stopping: bool = False) -> None:
        if self._status == 2 or (allow_stopping and self._status == 3):
            return
        raise ClientBalanceError(ClientCode.CLIENT_SHUTDOWN, "the consumer is not running")

    async def _fetcher(self, broker: int) -> tuple[WireClient, asyncio.Lock]:
        if broker not in self._leaders:
            await self.partition_meta(refresh=True)
        address = self._leaders.get(broker)
        if address is None:
            raise ClientBalanceError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {broker}")
        return await self._connections.leader(address)
