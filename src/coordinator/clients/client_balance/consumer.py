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

One connection to the group's coordinator carries the group requests and the heartbeats; one
per partition leader carries the fetches, so a long-polling fetch never delays a heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from coordinator.clients.client_balance.errors import ClientBalanceError, ClientCode
from coordinator.wire import client_balance_schema as schema
from coordinator.wire.client import WireClient, list_offsets, read_records
from rebalance.errors import ErrorCode

log = logging.getLogger("coordinator.client_balance")

CLIENT_VERSION: Final = "rebalance-client-balance/1"
#: TubeMQ's `TBaseConstants.META_VALUE_UNDEFINED`: the getters' answer when checks are off.
UNDEFINED: Final = -2
MIN_META_CHECK_INTERVAL_MS: Final = 5000
METADATA, FIND_COORDINATOR, OFFSET_COMMIT, FETCH = (3, 1), (10, 3), (8, 9), (1, 4)
EARLIEST, LATEST = -2, -1
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


@dataclass(frozen=True)
class ClientBalanceConfig:
    """TubeMQ's `ConsumerConfig`, where it applies (defaults from `TClientConstants`)."""

    bootstrap: str
    group_id: str
    client_id: str = "rebalance-client-balance"
    session_timeout_ms: int = 30_000
    register_retries: int = 5
    register_fail_wait_ms: int = 1000
    meta_check_interval_ms: int = 10_000
    consume_ready_wait_ms: int = 90_000
    rebalance_confirm_wait_ms: int = 3000
    #: A partition refused with PARTITION_OCCUPIED is not tried again sooner (421 before).
    occupied_retry_backoff_ms: int = 5000
    fetch_max_wait_ms: int = 200
    max_batch_records: int = 100
    #: Where a partition with no committed offset and no bootstrap offset starts.
    auto_offset_reset: str = "earliest"
    #: True: confirm only moves the position; offsets are committed by `commit()` (TubeMQ's
    #: `pullConfirmInLocal`).
    confirm_in_local: bool = False

    def __post_init__(self) -> None:
        if self.meta_check_interval_ms < MIN_META_CHECK_INTERVAL_MS:
            # DIFFERS from TubeMQ's ConsumerConfig, which meant to clamp and did not (§D.9).
            object.__setattr__(self, "meta_check_interval_ms", MIN_META_CHECK_INTERVAL_MS)
        if self.auto_offset_reset not in ("earliest", "latest"):
            raise ValueError("auto_offset_reset is earliest or latest")


@dataclass(frozen=True)
class OffsetInfo:
    """TubeMQ's `ConsumeOffsetInfo`: the next offset to consume, the log end, when it moved."""

    current_offset: int
    max_offset: int
    update_time_ms: int


@dataclass(frozen=True)
class Message:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


@dataclass(frozen=True)
class ConsumeResult:
    """TubeMQ's `ConsumeResult`: one batch of one partition, to be confirmed."""

    topic: str
    partition_key: str
    confirm_context: str
    messages: tuple[Message, ...]
    current_offset: int
    max_offset: int


@dataclass
class _Partition:
    broker_id: int
    topic: str
    partition: int
    position: int  # the next offset to consume (what a confirm commits)
    fetch_position: int  # the next offset to fetch (ahead of position by the buffer)
    max_offset: int = -1
    update_time_ms: int = 0
    buffer: list[Message] = field(default_factory=list)
    booked: str | None = None  # the confirm context of the batch handed out
    booked_end: int = -1


def partition_key(broker_id: int, topic: str, partition: int) -> str:
    """TubeMQ's `PartitionKey`: `brokerId:topic:partitionId`."""
    return f"{broker_id}:{topic}:{partition}"


def parse_key(key: str) -> tuple[int, str, int]:
    broker, topic, partition = key.split(":")
    return int(broker), topic, int(partition)


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
        self._group: WireClient | None = None
        self._group_lock = asyncio.Lock()
        self._leaders: dict[int, tuple[str, int]] = {}
        self._fetchers: dict[tuple[str, int], tuple[WireClient, asyncio.Lock]] = {}
        self._parts: dict[str, _Partition] = {}
        self._order: list[str] = []
        self._occupied_at: dict[str, float] = {}
        #: (topic, partition) with a register or release on its way: a heartbeat's answer
        #: may predate it, so the resynchronisation leaves these alone.
        self._in_flight: set[tuple[str, int]] = set()
        self._meta: dict[str, bool] = {}
        self._meta_at: float | None = None
        self._heartbeats: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

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
            await self._close_connections()
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
                await self._drop_group_connection()
                await asyncio.sleep(self.config.register_fail_wait_ms / 1000)

    async def _join(self) -> None:
        response = await self._group_request(
            schema.HEARTBEAT_KEY,
            {
                "group_id": self.config.group_id,
                "member_id": self._consumer_id,
                "member_epoch": 0,
                "source_count": self._sent_source_count,
                "node_id": self._sent_node_id,
                "topics": list(self._topics),
                "session_timeout_ms": self.config.session_timeout_ms,
            },
        )
        _check(response.error_code, response.error_message)
        self._epoch = int(response.member_epoch)
        self._interval_s = max(int(response.heartbeat_interval_ms), 1) / 1000

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
                await self._drop_group_connection()
            except ClientBalanceError as exc:
                log.warning("heartbeat refused: %s", exc)

    async def _heartbeat(self) -> None:
        by_topic: dict[str, list[int]] = {}
        reported = {(part.topic, part.partition) for part in self._parts.values()}
        for topic, partition in reported:
            by_topic.setdefault(topic, []).append(partition)
        response = await self._group_request(
            schema.HEARTBEAT_KEY,
            {
                "group_id": self.config.group_id,
                "member_id": self._consumer_id,
                "member_epoch": self._epoch,
                "held": [{"topic": t, "partitions": sorted(ps)} for t, ps in by_topic.items()],
            },
        )
        code = int(response.error_code)
        if code == ErrorCode.HB_NO_NODE:
            # Our session ran out: our partitions are free for others. Start over as a new
            # incarnation, holding nothing (TubeMQ's client re-registers the same way).
            log.warning("the coordinator no longer knows this node; joining again")
            self._drop_all()
            await self._join_with_retries()
            return
        _check(code, response.error_message)
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
        held = {(part.topic, part.partition): key for key, part in self._parts.items()}
        for tp in sorted((reported & held.keys()) - booked - self._in_flight):
            log.warning("the coordinator no longer records %s as ours: dropped", held[tp])
            self._drop(held[tp])
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
        response = await self._group_request(
            METADATA[0], {"topics": [{"name": t} for t in self._topics]}, version=METADATA[1]
        )
        self._leaders = {int(b.node_id): (b.host, int(b.port)) for b in response.brokers}
        meta: dict[str, bool] = {}
        for topic in response.topics:
            for p in topic.partitions:
                leader = int(p.leader_id)
                usable = p.error_code == 0 and topic.error_code == 0 and leader in self._leaders
                meta[partition_key(leader, topic.name, int(p.partition_index))] = usable
        self._meta, self._meta_at = meta, now
        for key in [k for k in self._parts if not meta.get(k, False)]:
            await self.disconnect(key)
        return dict(meta)

    # ===================================================================== partitions
    def registered(self) -> set[str]:
        """TubeMQ's `getCurRegisteredPartSet`."""
        return set(self._parts)

    async def partitions_ready(self, max_wait_ms: int) -> bool:
        """True once at least one partition is registered, waiting up to `max_wait_ms` for it
        (TubeMQ's version returned after one ~250 ms sleep: spec §D.9)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while not self._parts:
            remaining = deadline - loop.time()
            if remaining <= 0 or self.is_shutdown:
                return bool(self._parts)
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
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
        existing = self._parts.get(key)
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
        response = await self._group_request(
            schema.REGISTER_KEY,
            {
                "group_id": self.config.group_id,
                "member_id": self._consumer_id,
                "member_epoch": self._epoch,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": partition, "bootstrap_offset": bootstrap_offset}
                        ],
                    }
                ],
            },
        )
        _check(response.error_code, response.error_message)
        answer = response.topics[0].partitions[0]
        code = int(answer.error_code)
        if code == ErrorCode.PARTITION_OCCUPIED:
            self._occupied_at[key] = loop.time()
            raise ClientBalanceError(code, f"{key} is held by {answer.holder}")
        _check(code, key)
        self._occupied_at.pop(key, None)
        offset = int(answer.offset)
        if offset < 0:
            offset = await self._reset_offset(broker, topic, partition)
        self._parts[key] = _Partition(broker, topic, partition, offset, offset)
        self._order.append(key)
        self._changed.set()
        return offset

    async def disconnect(self, key: str) -> None:
        """Release partition `key`: a batch handed out and not yet confirmed gets up to
        `rebalance_confirm_wait_ms` to be confirmed, then the partition is released (and the
        unconfirmed batch is not committed: it will be consumed again by the next holder)."""
        self._check_running(allow_stopping=True)
        part = self._parts.get(key)
        if part is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.rebalance_confirm_wait_ms / 1000
        while part.booked is not None and loop.time() < deadline and key in self._parts:
            await asyncio.sleep(0.02)
        self._drop(key)
        await self._release(part.topic, part.partition)

    async def _release(self, topic: str, partition: int) -> None:
        """Unregister at the coordinator. Its per-partition answer needs nothing more from us:
        NONE, or HB_NO_NODE (411: nobody holds it, e.g. a retry) or DUPLICATE_PARTITION (412:
        another node does), after which it is not ours either way."""
        self._in_flight.add((topic, partition))
        try:
            response = await self._group_request(
                schema.RELEASE_KEY,
                {
                    "group_id": self.config.group_id,
                    "member_id": self._consumer_id,
                    "member_epoch": self._epoch,
                    "topics": [{"name": topic, "partitions": [partition]}],
                },
            )
        finally:
            self._in_flight.discard((topic, partition))
        _check(response.error_code)

    def offsets(self) -> dict[str, OffsetInfo]:
        """TubeMQ's `getCurPartitionOffsetInfos`."""
        return {
            key: OffsetInfo(p.position, p.max_offset, p.update_time_ms)
            for key, p in self._parts.items()
        }

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
            idle = [k for k in self._order if self._parts[k].booked is None]
            for key in idle:
                part = self._parts[key]
                if part.buffer:
                    return self._book(key, part)
            if idle:
                await self._fetch(idle, max(0.0, min(deadline - loop.time(), 1.0)))
                for key in idle:
                    fetched = self._parts.get(key)
                    if fetched is not None and fetched.booked is None and fetched.buffer:
                        return self._book(key, fetched)
            if loop.time() >= deadline:
                if not self._parts:
                    raise ClientBalanceError(ClientCode.NO_PARTITION_ASSIGNED)
                if not idle:
                    raise ClientBalanceError(ClientCode.ALL_PARTITION_INUSE)
                raise ClientBalanceError(ClientCode.ALL_PARTITION_WAITING)
            if not idle:
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(deadline - loop.time(), 0.05) or 0.001):
                        await self._changed.wait()

    def _book(self, key: str, part: _Partition) -> ConsumeResult:
        batch = part.buffer[: self.config.max_batch_records]
        del part.buffer[: len(batch)]
        booked_ms = int(asyncio.get_running_loop().time() * 1000)
        part.booked = f"{key}:{booked_ms}"
        part.booked_end = batch[-1].offset + 1
        # Round robin: the partition just served goes to the back.
        self._order.remove(key)
        self._order.append(key)
        return ConsumeResult(
            part.topic, key, part.booked, tuple(batch), part.position, part.max_offset
        )

    async def confirm(self, context: str, consumed: bool = True) -> int:
        """End the batch of `context`: consumed moves the partition past it and commits that
        offset (unless `confirm_in_local`); not consumed hands the same records out again.
        Returns the partition's next offset. Raises `ClientBalanceError`: FENCED_MEMBER_EPOCH
        when the partition is no longer this node's (the commit is refused; it is dropped)."""
        self._check_running()
        key = context.rsplit(":", 1)[0]
        part = self._parts.get(key)
        if part is None or part.booked != context:
            raise ClientBalanceError(ErrorCode.BAD_REQUEST, f"confirm context {context} is stale")
        part.booked = None
        self._changed.set()
        if not consumed:
            part.buffer.clear()
            part.fetch_position = part.position
            return part.position
        part.position = part.booked_end
        part.update_time_ms = int(asyncio.get_running_loop().time() * 1000)
        if not self.config.confirm_in_local:
            await self._commit([part])
        return part.position

    async def commit(self) -> None:
        """Commit every registered partition's position (for `confirm_in_local`)."""
        self._check_running()
        await self._commit(list(self._parts.values()))

    async def _commit(self, parts: Sequence[_Partition]) -> None:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for part in parts:
            by_topic.setdefault(part.topic, []).append(
                {"partition_index": part.partition, "committed_offset": part.position}
            )
        response = await self._group_request(
            OFFSET_COMMIT[0],
            {
                "group_id": self.config.group_id,
                "generation_id_or_member_epoch": self._epoch,
                "member_id": self._consumer_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            },
            version=OFFSET_COMMIT[1],
        )
        for topic in response.topics:
            for p in topic.partitions:
                code = int(p.error_code)
                if code != 0:
                    key = partition_key(
                        _broker_of(parts, topic.name, p.partition_index),
                        topic.name,
                        int(p.partition_index),
                    )
                    self._drop(key)
                    raise ClientBalanceError(code, f"commit of {key} refused")

    async def _fetch(self, keys: Sequence[str], max_wait_s: float) -> None:
        """One Fetch per leader for `keys`, filling their buffers."""
        by_leader: dict[int, list[_Partition]] = {}
        for key in keys:
            part = self._parts[key]
            by_leader.setdefault(part.broker_id, []).append(part)
        wait_ms = int(min(max_wait_s * 1000, self.config.fetch_max_wait_ms))
        for broker, parts in by_leader.items():
            client, lock = await self._fetcher(broker)
            by_topic: dict[str, list[dict[str, int]]] = {}
            for part in parts:
                by_topic.setdefault(part.topic, []).append(
                    {"partition": part.partition, "fetch_offset": part.fetch_position,
                     "partition_max_bytes": 1 << 20}
                )  # fmt: skip
            async with lock:
                response = await client.request(
                    *FETCH,
                    {
                        "replica_id": -1,
                        "max_wait": timedelta(milliseconds=wait_ms),
                        "min_bytes": 1,
                        "max_bytes": 2**31 - 1,
                        "isolation_level": 0,
                        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                    },
                )
            for topic in response.responses:
                for data in topic.partitions:
                    self._accept(broker, topic.topic, data)

    def _accept(self, broker: int, topic: str, data: Any) -> None:
        part = self._parts.get(partition_key(broker, topic, int(data.partition_index)))
        if part is None:
            return  # released while the fetch was out
        if int(data.error_code) != 0:
            raise ClientBalanceError(int(data.error_code), f"fetch {topic}-{part.partition}")
        part.max_offset = int(data.high_watermark)
        if not data.records:
            return
        fresh = [r for r in read_records(data.records) if r.offset >= part.fetch_position]
        for record in fresh:
            part.buffer.append(
                Message(
                    int(record.offset),
                    record.key,
                    record.value,
                    int(record.timestamp.timestamp() * 1000),
                )
            )
        if fresh:
            part.fetch_position = int(fresh[-1].offset) + 1

    # ======================================================================= shutdown
    async def shutdown(self) -> None:
        """Release every partition, leave the group, stop heartbeating, close connections."""
        if self._status != 2:
            await self._close_connections()
            self._status = 0
            return
        self._status = 3
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeats
        with contextlib.suppress(ClientBalanceError, OSError, asyncio.IncompleteReadError):
            for key in list(self._parts):
                await self.disconnect(key)
            await self._group_request(
                schema.HEARTBEAT_KEY,
                {"group_id": self.config.group_id, "member_id": self._consumer_id,
                 "member_epoch": -1},
            )  # fmt: skip
        self._drop_all()
        await self._close_connections()
        self._status = 0

    # ======================================================================== plumbing
    def _check_running(self, *, allow_stopping: bool = False) -> None:
        if self._status == 2 or (allow_stopping and self._status == 3):
            return
        raise ClientBalanceError(ClientCode.CLIENT_SHUTDOWN, "the consumer is not running")

    def _drop(self, key: str) -> None:
        if self._parts.pop(key, None) is not None:
            self._order.remove(key)
            self._changed.set()

    def _drop_all(self) -> None:
        for key in list(self._parts):
            self._drop(key)

    async def _reset_offset(self, broker: int, topic: str, partition: int) -> int:
        client, lock = await self._fetcher(broker)
        timestamp = EARLIEST if self.config.auto_offset_reset == "earliest" else LATEST
        async with lock:
            offsets = await list_offsets(client, [(topic, partition)], timestamp)
        return offsets[(topic, partition)]

    async def _group_request(
        self, api_key: int, values: dict[str, Any], *, version: int = 0
    ) -> Any:
        async with self._group_lock:
            if self._group is None:
                self._group = await self._find_coordinator()
            return await self._group.request(api_key, version, values)

    async def _find_coordinator(self) -> WireClient:
        host, _, port = self.config.bootstrap.rpartition(":")
        bootstrap = await WireClient.connect(host, int(port), self.config.client_id)
        try:
            found = await bootstrap.request(
                *FIND_COORDINATOR, {"key": self.config.group_id, "key_type": 0}
            )
        except BaseException:
            await bootstrap.close()
            raise
        code = int(found.error_code)
        if code != 0:
            await bootstrap.close()
            raise ClientBalanceError(code, "finding the group's coordinator")
        if (found.host, int(found.port)) == (host, int(port)):
            return bootstrap
        await bootstrap.close()
        return await WireClient.connect(found.host, int(found.port), self.config.client_id)

    async def _fetcher(self, broker: int) -> tuple[WireClient, asyncio.Lock]:
        if broker not in self._leaders:
            await self.partition_meta(refresh=True)
        address = self._leaders.get(broker)
        if address is None:
            raise ClientBalanceError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {broker}")
        found = self._fetchers.get(address)
        if found is None:
            connection = await WireClient.connect(*address, self.config.client_id)
            found = self._fetchers[address] = (connection, asyncio.Lock())
        return found

    async def _drop_group_connection(self) -> None:
        async with self._group_lock:
            if self._group is not None:
                await self._group.close()
                self._group = None

    async def _close_connections(self) -> None:
        await self._drop_group_connection()
        for client, _ in self._fetchers.values():
            await client.close()
        self._fetchers.clear()


def _check(code: Any, message: str | None = None) -> None:
    if int(code) != 0:
        raise ClientBalanceError(int(code), message or "")


def _broker_of(parts: Sequence[_Partition], topic: str, partition: int) -> int:
    for part in parts:
        if (part.topic, part.partition) == (topic, partition):
            return part.broker_id
    return -1
