"""This node's `__consumer_offsets` partitions, held by leases in PostgreSQL: `LeaseManager`.

Each partition's row in `leases` names its owner, an epoch and an expiry that the server's
clock judges (`clock_timestamp()`, never ours). Every `renew` interval the manager, in one
round (`tick`):

1. renews its node row (`nodes`: the live nodes, Metadata's broker list) and its partitions'
   leases, `WHERE epoch = <ours>`: a partition not renewed was taken over, and is lost at once;
2. reads the lease table and the live nodes into its cache (`owner_of`, `live_nodes`);
3. takes expired or released partitions up to its fair share, ceil(partitions / live nodes),
   each with `epoch + 1` (the fencing token the store writes with); or, above its share (a
   node joined), hands the extra partitions over: stops answering for them, awaits `on_lost`,
   then releases them (`lease_expires = '-infinity'`), so the newcomer takes them at once.

Every lease change is announced by NOTIFY on `LEASES_CHANNEL`; a notification starts a round at
once (a released partition is taken within a round trip), and polling at the renew interval
covers a lost one. For each partition it answers for, the manager keeps a LOCAL deadline: the
monotonic time taken before the renewal statement was sent, plus the lease. The server's expiry
is at least that late, so `may_answer` turns false no later than any other node may take the
partition; a node cut off from PostgreSQL stops answering at its deadline (and reports the
partitions lost).

Settings (`LeaseSettings.from_settings`), Kafka-like names:
* `cluster.lease.ms` (6000): a lease's length, as `broker.session.timeout.ms` (Kafka: 9000);
* `cluster.lease.renew.ms` (2000): the round's interval, as `broker.heartbeat.interval.ms`
  (Kafka: 2000);
* `offsets.topic.num.partitions` (50): Kafka's own setting; every node must use the same.

`on_acquired(partition, epoch)` and `on_lost(partition)` are awaited one at a time, in the
order the changes happened, on a task of their own: a long load does not delay renewals.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.cluster.connection import connect, one_line, redacted, stop_tasks_then_close
from coordinator.cluster.schema import LEASES_CHANNEL, ensure_schema
from coordinator.errors import ClusterError, UsageError
from coordinator.node.ownership import NodeAddress

log = logging.getLogger("coordinator.cluster")

SETTING_NAMES: Mapping[str, str] = {
    "cluster.lease.ms": "lease_ms",
    "cluster.lease.renew.ms": "renew_ms",
    "offsets.topic.num.partitions": "partitions",
}
"""The node settings of `LeaseSettings`, by their fields."""

Acquired = Callable[[int, int], Awaitable[None]]
Lost = Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class LeaseSettings:
    lease_ms: int = 6000
    renew_ms: int = 2000
    partitions: int = 50

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> LeaseSettings:
        values: dict[str, int] = {}
        for name, field in SETTING_NAMES.items():
            if name in settings:
                text = settings[name]
                if not text.isdigit() or int(text) <= 0:
                    raise UsageError(f"{name}={text!r}: a positive whole number is wanted")
                values[field] = int(text)
        made = cls(**values)
        if made.renew_ms * 2 > made.lease_ms:
            raise UsageError(
                f"cluster.lease.renew.ms={made.renew_ms} must be at most half of "
                f"cluster.lease.ms={made.lease_ms}, or a late round loses the lease"
            )
        return made


async def _nothing_acquired(partition: int, epoch: int) -> None:
    return None


async def _nothing_lost(partition: int) -> None:
    return None


class LeaseManager:
    """This node's leases; an `Ownership` (`coordinator.node.ownership`) for the node."""

    def __init__(
        self,
        url: str,
        node: NodeAddress,
        *,
        settings: LeaseSettings = LeaseSettings(),
        on_acquired: Acquired = _nothing_acquired,
        on_lost: Lost = _nothing_lost,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url, self.node, self.settings = url, node, settings
        self._on_acquired, self._on_lost, self._clock = on_acquired, on_lost, clock
        self._lease_s = settings.lease_ms / 1000
        self.incarnation = uuid.uuid4().hex
        self.session_name = f"rebalance node {node.node_id}"
        self._epochs: dict[int, int] = {}  # held: renewed, and the store writes with them
        self._deadlines: dict[int, float] = {}  # answered for, until the local deadline
        self._handing_over: set[int] = set()
        self._owners: dict[int, tuple[int | None, float]] = {}  # owner id, expiry (local est.)
        self._nodes: dict[int, tuple[NodeAddress, float]] = {}
        self._connection: Any = None
        self._listener: Any = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._events: asyncio.Queue[tuple[Callable[[], Awaitable[None]], asyncio.Future[None]]]
        self._events = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    # -- the Ownership protocol -----------------------------------------------------------
    def owner_of(self, partition: int) -> NodeAddress | None:
        if self.may_answer(partition):
            return self.node
        owner, until = self._owners.get(partition, (None, 0.0))
        if owner is None or owner == self.node.node_id or self._clock() >= until:
            return None
        live = self._nodes.get(owner)
        return live[0] if live is not None and self._clock() < live[1] else None

    def live_nodes(self) -> Sequence[NodeAddress]:
        now = self._clock()
        nodes = {i: a for i, (a, until) in self._nodes.items() if now < until}
        nodes[self.node.node_id] = self.node
        return [nodes[i] for i in sorted(nodes)]

    def may_answer(self, partition: int) -> bool:
        return self._clock() < self._deadlines.get(partition, -math.inf)

    # -- what the store fences with ---------------------------------------------------------
    def epoch_of(self, partition: int) -> int | None:
        """The epoch this node holds `partition` at, None if it does not hold it."""
        return self._epochs.get(partition)

    def held(self) -> dict[int, int]:
        return dict(self._epochs)

    # -- life -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect, create or migrate the schema, register this node (`ClusterError` if its
        id is live elsewhere), listen, take a first share, and go on every renew interval."""
        self._connection = await connect(self.url, application_name=self.session_name)
        try:
            await ensure_schema(self._connection, redacted(self.url), self.settings.partitions)
            await self._register()
            await self._listen()
        except BaseException:
            await self._connection.close()
            raise
        self._tasks.append(asyncio.create_task(self._run_events(), name="lease callbacks"))
        await self.tick()
        self._tasks.append(asyncio.create_task(self._rounds(), name="lease rounds"))

    async def _register(self) -> None:
        node = self.node
        row = await self._one(
            "INSERT INTO nodes AS n (node_id, incarnation, host, port, rack, lease_expires,"
            " started_at) VALUES (%s, %s, %s, %s, %s, clock_timestamp() + %s * interval '1 ms',"
            " clock_timestamp()) ON CONFLICT (node_id) DO UPDATE SET incarnation ="
            " excluded.incarnation, host = excluded.host, port = excluded.port, rack ="
            " excluded.rack, lease_expires = excluded.lease_expires, started_at ="
            " excluded.started_at WHERE n.lease_expires < clock_timestamp() RETURNING node_id",
            (node.node_id, self.incarnation, node.host, node.port, node.rack,
             self.settings.lease_ms),
        )  # fmt: skip
        if row is not None:
            await self._notify()  # peers count this node now, and hand over its share
            return
        other = await self._one(
            "SELECT host, port, extract(epoch FROM lease_expires - clock_timestamp())"
            " FROM nodes WHERE node_id = %s",
            (node.node_id,),
        )
        where = f"{other[0]}:{other[1]}, its lease ends in {float(other[2]):.1f} s" if other else ""
        raise ClusterError(
            f"node id {node.node_id} is live on another node ({where}) in the cluster at "
            f"{redacted(self.url)}: give this node another node id, or wait for that lease"
        )

    async def _listen(self) -> None:
        self._listener = await connect(self.url, application_name=self.session_name)
        await self._listener.execute(f"LISTEN {LEASES_CHANNEL}")
        self._tasks.append(asyncio.create_task(self._notifications(), name="lease notifies"))

    async def _notifications(self) -> None:
        with contextlib.suppress(Exception):  # a lost listener: polling goes on
            async for notice in self._listener.notifies():
                if notice.payload != str(self.node.node_id):
                    self._wake.set()

    async def _rounds(self) -> None:
        while not self._stopped:
            # asyncio.timeout: 3.11's wait_for loses a cancel (close) that meets a wake-up.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.renew_ms / 1000):
                    await self._wake.wait()
            self._wake.clear()
            if not self._stopped:
                await self.tick()

    async def _run_events(self) -> None:
        while True:
            call, done = await self._events.get()
            try:
                await call()
            except Exception:
                log.exception("a lease callback failed")
            finally:
                if not done.done():
                    done.set_result(None)

    def _queue(self, call: Callable[[], Awaitable[None]]) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._events.put_nowait((call, done))
        return done

    # -- one round --------------------------------------------------------------------------
    async def tick(self) -> None:
        """Renew, refresh the cache, take or give back partitions: one round, now."""
        async with self._lock:
            try:
                if self._connection is None or self._connection.closed:
                    self._connection = await connect(self.url, application_name=self.session_name)
                await self._renew()
                await self._refresh()
                await self._balance()
            except (ClusterError, OSError) as exc:
                self._connection_failed(one_line(exc))
            except Exception as exc:
                if type(exc).__module__.startswith("psycopg"):
                    self._connection_failed(one_line(exc))
                else:
                    raise
            self._demote_past_deadline()

    def _connection_failed(self, why: str) -> None:
        log.warning("cluster lease round failed (%s); holding until the local deadlines", why)
        connection, self._connection = self._connection, None
        if connection is not None:
            asyncio.get_running_loop().create_task(connection.close())

    def _demote_past_deadline(self) -> None:
        now = self._clock()
        for p in [p for p in self._epochs if p not in self._handing_over]:
            if now >= self._deadlines.get(p, -math.inf):
                log.warning("partition %d: lease deadline passed unrenewed, resigning", p)
                self._lose(p)

    def _lose(self, partition: int) -> None:
        self._epochs.pop(partition, None)
        self._deadlines.pop(partition, None)
        self._handing_over.discard(partition)
        self._queue(functools.partial(self._on_lost, partition))

    async def _renew(self) -> None:
        row = await self._one(
            "UPDATE nodes SET lease_expires = clock_timestamp() + %s * interval '1 ms'"
            " WHERE node_id = %s AND incarnation = %s RETURNING node_id",
            (self.settings.lease_ms, self.node.node_id, self.incarnation),
        )
        if row is None:  # another start took our node id after our lease lapsed
            for p in list(self._epochs):
                self._lose(p)
            await self._register()
        if not self._epochs:
            return
        held = sorted(self._epochs)
        sent = self._clock()  # before the statement: the server's expiry is later than this
        rows = await self._all(
            "UPDATE leases AS l SET lease_expires = clock_timestamp() + %s * interval '1 ms'"
            " FROM unnest(%s::integer[], %s::bigint[]) AS h(p, e)"
            " WHERE l.partition = h.p AND l.epoch = h.e AND l.owner = %s RETURNING l.partition",
            (self.settings.lease_ms, held, [self._epochs[p] for p in held], self.node.node_id),
        )
        renewed = {int(r[0]) for r in rows}
        for p in held:
            if p not in renewed:
                log.warning("partition %d was taken over by another node", p)
                self._lose(p)
            elif p not in self._handing_over:
                self._deadlines[p] = sent + self._lease_s

    async def _refresh(self) -> None:
        now = self._clock()
        remaining = (
            "CASE WHEN lease_expires > clock_timestamp()"
            " THEN extract(epoch FROM lease_expires - clock_timestamp()) ELSE 0 END"
        )
        leases = await self._all(f"SELECT partition, owner, {remaining} FROM leases", ())
        self._owners = {int(p): (o, now + float(left)) for p, o, left in leases}
        nodes = await self._all(
            f"SELECT node_id, host, port, rack, {remaining} FROM nodes"
            " WHERE lease_expires > clock_timestamp()",
            (),
        )
        self._nodes = {
            int(i): (NodeAddress(int(i), h, int(port), rack), now + float(left))
            for i, h, port, rack, left in nodes
        }

    def fair_share(self) -> int:
        live = len(self.live_nodes())
        return math.ceil(self.settings.partitions / live)

    async def _balance(self) -> None:
        share = self.fair_share()
        keeping = [p for p in sorted(self._epochs) if p not in self._handing_over]
        if len(keeping) > share:
            extra = keeping[share:]
            self._handing_over.update(extra)
            for p in extra:
                self._deadlines.pop(p, None)
            asyncio.get_running_loop().create_task(self._hand_over(extra))
        elif len(keeping) < share:
            await self._acquire(share - len(keeping))

    async def _acquire(self, count: int) -> None:
        async with self._connection.transaction():
            sent = self._clock()
            rows = await self._all(
                "WITH free AS (SELECT partition FROM leases WHERE lease_expires <"
                " clock_timestamp() AND NOT (partition = ANY(%s::integer[])) ORDER BY partition"
                " LIMIT %s FOR UPDATE SKIP LOCKED)"
                " UPDATE leases AS l SET epoch = l.epoch + 1, owner = %s, lease_expires ="
                " clock_timestamp() + %s * interval '1 ms', changed_at = clock_timestamp()"
                " FROM free WHERE l.partition = free.partition RETURNING l.partition, l.epoch",
                (sorted(self._epochs), count, self.node.node_id, self.settings.lease_ms),
            )
            if rows:
                await self._notify()
        for p, epoch in sorted((int(p), int(e)) for p, e in rows):
            log.info("partition %d acquired at epoch %d", p, epoch)
            self._epochs[p] = epoch
            self._deadlines[p] = sent + self._lease_s
            self._owners[p] = (self.node.node_id, sent + self._lease_s)
            self._queue(functools.partial(self._on_acquired, p, epoch))

    async def _hand_over(self, partitions: list[int]) -> None:
        """Give partitions back: `on_lost` first (no reply goes out for them from now on),
        then release their leases, so that a peer takes them without waiting for expiry."""
        await self._all_lost(partitions)
        async with self._lock:
            mine = [p for p in partitions if p in self._handing_over]
            try:
                await self._release(mine)
            except Exception as exc:  # they lapse instead
                log.warning("handing over %s failed: %s", mine, one_line(exc))
            for p in mine:
                self._epochs.pop(p, None)
                self._handing_over.discard(p)

    async def _all_lost(self, partitions: list[int]) -> None:
        lost = [self._queue(functools.partial(self._on_lost, p)) for p in partitions]
        await asyncio.gather(*lost)

    async def _release(self, partitions: list[int]) -> None:
        if not partitions or self._connection is None:
            return
        async with self._connection.transaction():
            await self._connection.execute(
                "UPDATE leases AS l SET owner = NULL, lease_expires = '-infinity',"
                " changed_at = clock_timestamp() FROM unnest(%s::integer[], %s::bigint[])"
                " AS h(p, e) WHERE l.partition = h.p AND l.epoch = h.e AND l.owner = %s",
                (partitions, [self._epochs[p] for p in partitions], self.node.node_id),
            )
            await self._notify()

    async def _notify(self) -> None:
        await self._connection.execute(
            "SELECT pg_notify(%s, %s)", (LEASES_CHANNEL, str(self.node.node_id))
        )

    async def _one(self, sql: str, params: Sequence[object]) -> Any:
        return await (await self._connection.execute(sql, params)).fetchone()

    async def _all(self, sql: str, params: Sequence[object]) -> list[Any]:
        return list(await (await self._connection.execute(sql, params)).fetchall())

    # -- stopping ---------------------------------------------------------------------------
    async def release_all(self) -> None:
        """Graceful stop (SIGTERM): stop answering, `on_lost` for every partition, then release
        every lease and this node's row in one transaction, so peers take over at once."""
        self._stopped = True
        self._deadlines.clear()
        held = [p for p in sorted(self._epochs) if p not in self._handing_over]
        await self._all_lost(held)
        async with self._lock:
            try:
                if self._connection is not None:
                    await self._release(sorted(self._epochs))
                    await self._connection.execute(
                        "UPDATE nodes SET lease_expires = '-infinity'"
                        " WHERE node_id = %s AND incarnation = %s",
                        (self.node.node_id, self.incarnation),
                    )
            finally:
                self._epochs.clear()
                self._handing_over.clear()
        await self.close()

    async def close(self) -> None:
        """Stop without releasing anything: the leases lapse on the server's clock (as when
        the node dies)."""
        self._stopped = True
        self._deadlines.clear()
        await stop_tasks_then_close(self._tasks, (self._connection, self._listener))
        self._connection = self._listener = None
