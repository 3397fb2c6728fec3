"""The asyncio shell around the pure core: time, timers, durability and reply delivery.

`GroupRuntime` owns the only `GroupCoordinatorCore` of a server and calls it exclusively from the
event loop thread, so every group is processed by one serial lane (the loop itself) and the
core never needs a lock. For each handler result it:

1. arms and cancels timers (`coordinator.groups.timer_wheel`: one loop timer for all of them; a
   firing timer re-enters the core through `on_timer`, on the same loop, exactly like a request);
2. appends the result's records to the store (the store batches concurrent appends into one
   transaction and fsync: group commit);
3. answers the result's replies only once those records are durable, and never before the
   records of any earlier result are durable (appends complete in order), so no reply can
   acknowledge state that a crash could still lose;
4. computes the target assignments the core offloads off the loop
   (`coordinator.groups.target_offload`).

The partitions it owns change (Kafka's onElection / onResignation): `take_over(p)` loads one
(COORDINATOR_LOAD_IN_PROGRESS meanwhile), `resign(p)` unloads it (parked requests get
NOT_COORDINATOR, its timers are cancelled). Each reply is checked against the node's `Ownership`
when it is handed over (`coordinator.groups.reply_gate`; no check on a single node).

If the store fails, the affected partitions are unloaded (parked requests get NOT_COORDINATOR)
and loaded again from what is durable, and the failed result's own replies become
NOT_COORDINATOR: clients rediscover the coordinator and retry, as with a Kafka leader change. A
write fenced because another node took the partitions over (`FencedError`) resigns them instead.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from coordinator.errors import FencedError
from coordinator.groups import record_codec
from coordinator.groups.event_log.log import EventLog, epoch_offset_ms
from coordinator.groups.group_log import log_group_events
from coordinator.groups.reply_gate import gate_for
from coordinator.groups.target_offload import TargetOffload
from coordinator.groups.timer_wheel import TimerWheel
from coordinator.node.ownership import Ownership
from rebalance.classic.commands import Heartbeat
from rebalance.classic.replies import HeartbeatReply
from rebalance.commands import Command
from rebalance.core import GroupCoordinatorCore
from rebalance.effects import Cancel, Result
from rebalance.errors import ErrorCode
from rebalance.records import Record
from rebalance.timers import TimerKey
from rebalance.topics import TopicMetadata

if TYPE_CHECKING:
    from coordinator.groups.assignor_worker import AssignorWorker
    from coordinator.groups.store.base import RecordStore, StoredRecord

log = logging.getLogger("coordinator.runtime")

_WRITE_FAILURE_LOG_EVERY = 10.0
"""Seconds between two reports of failed store writes."""

R = TypeVar("R")


class MonotonicClock:
    """Milliseconds from the loop's monotonic clock."""

    def now_ms(self) -> int:
        return int(time.monotonic() * 1000)


class GroupRuntime:
    def __init__(
        self,
        core: GroupCoordinatorCore,
        store: RecordStore,
        events: EventLog | None = None,
        *,
        assignor_worker: Literal["process", "thread"] = "process",
        ownership: Ownership | None = None,
    ) -> None:
        self.core = core
        self.store = store
        self.events = events
        self._clock = MonotonicClock()
        self._epoch_offset = epoch_offset_ms(self._clock.now_ms())
        self._offset_ms = 0.0
        #: The core's timers, on one loop timer.
        self._timers = TimerWheel(self._clock.now_ms, self._loop_time, self._on_timer)
        #: Parked requests by token: whom to hand the reply to, and the command (for its
        #: error reply if the store fails).
        self._waiting: dict[Hashable, tuple[Callable[[Any], None], Command[Any]]] = {}
        self._last_write: asyncio.Future[None] | None = None
        #: The results whose replies wait for a write, with that write (`_carry_out`): one
        #: callback on the write for all of them, not one each (while the leader's record of a
        #: round is written, the SyncGroups that come after it are answered behind it).
        self._held: tuple[asyncio.Future[None], list[Result]] | None = None
        self._next_token = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reloading: set[int] = set()
        #: Partitions loading, each with its load's token: a load whose partition was resigned
        #: (or loaded again) meanwhile finds another token, and drops what it read.
        self._loading: dict[int, object] = {}
        self._reviving: set[int] = set()
        self._gate = gate_for(ownership, core, self.resign, self._take_over_soon)
        #: When a failed store write was last logged, and how many failed since (a full disk
        #: fails every write: one line per `_WRITE_FAILURE_LOG_EVERY` seconds, not thousands).
        self._failure_logged_at = -_WRITE_FAILURE_LOG_EVERY
        self._failures_unlogged = 0
        self._batch: list[StoredRecord] = []
        self._batch_future: asyncio.Future[None] | None = None
        self._targets = TargetOffload(
            core, self._carry_out, self._clock.now_ms, self._running_loop, assignor_worker
        )

    @property
    def assignor_worker(self) -> AssignorWorker | None:
        """The assignor worker process's handle, once a target was offloaded to it."""
        return self._targets.worker

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self, partitions: Iterable[int] | None = None) -> None:
        """Own `partitions` (default: every one the node's ownership lets it answer for, all on
        a single node): DOWN -> INITIALIZE -> STABLE for every group."""
        self._loop = asyncio.get_running_loop()
        # Loop time and our clock are both monotonic; keep their difference once.
        self._offset_ms = self._loop.time() * 1000 - self._clock.now_ms()
        every = range(self.core.config.offsets_topic_num_partitions)
        if partitions is None:
            partitions = every if self._gate is None else filter(self._gate.may_answer, every)
        await self._load(list(partitions))

    async def take_over(self, partition: int) -> None:
        """Start owning `partition` (Kafka's onElection): load its groups and offsets from the
        store, requests for them answered COORDINATOR_LOAD_IN_PROGRESS meanwhile; returns once
        they are live (members' sessions armed from now). Nothing if it is owned or loading
        already (that load completes it)."""
        await self._load([partition])

    def resign(self, partition: int) -> None:
        """Stop owning `partition` (Kafka's onResignation): its groups are dropped, their parked
        requests answered NOT_COORDINATOR and their timers cancelled; a load of it under way
        is abandoned. Nothing if it is not owned."""
        self._loading.pop(partition, None)
        unloaded = self.core.unload(partition, self._clock.now_ms())
        self._log_events(unloaded)
        self._carry_out_timers(unloaded)
        self._deliver(unloaded, gated=False)  # NOT_COORDINATOR already

    def _take_over_soon(self, partition: int) -> None:
        if partition not in self._reviving:  # (one load, however many requests ask meanwhile)
            self._reviving.add(partition)
            task = self._running_loop().create_task(self.take_over(partition))
            task.add_done_callback(lambda _: self._reviving.discard(partition))

    async def _load(self, partitions: list[int]) -> None:
        owned = self.core.state.partitions
        partitions = [p for p in partitions if p not in owned]
        token = object()
        for p in partitions:
            self.core.begin_load(p)
            self._loading[p] = token
        try:
            rows = await asyncio.to_thread(lambda: list(self.store.load(partitions)))
        except BaseException:  # (a store that cannot be read: nothing stays loading forever)
            for p in partitions:
                if self._loading.get(p) is token:
                    self.resign(p)
            raise
        # Those resigned (maybe loaded again) while the rows were read are another load's now.
        partitions = [p for p in partitions if self._loading.get(p) is token]
        for p in partitions:
            del self._loading[p]
        wanted = set(partitions)
        loaded = 0
        for row in rows:
            record = record_codec.decode(row)
            if self.core.partition_for(record.group_id) in wanted:
                self.core.replay(record)
                loaded += 1
        now = self._clock.now_ms()
        for p in partitions:
            # Like any result: loading can decide things (a KIP-848 group whose topics changed
            # while it was not loaded bumps its epoch), and its records must be written too.
            self._carry_out(self.core.complete_load(p, now))
        log.info("loaded %d records for %d partitions", loaded, len(partitions))
        self._targets.prime()

    async def close(self) -> None:
        await self._targets.close()
        self._timers.close()
        if self._batch_future is not None:
            self._flush()
        if self._last_write is not None:
            # Waits without raising: a failed write was already handled by `_after_write`.
            await asyncio.wait([self._last_write])

    # -- requests -------------------------------------------------------------------------
    def heartbeat_now(self, command: Heartbeat) -> HeartbeatReply | None:
        """Answer a heartbeat synchronously when no write is pending (a heartbeat never parks
        or persists, but its reply must not overtake a pending write); None otherwise, in
        which case the heartbeat has not been run and must go through `submit`."""
        if self._pending_write() is not None:
            return None
        self._next_token += 1
        result = self.core.handle(command, self._clock.now_ms(), self._next_token)
        self._carry_out(result)
        (reply,) = result.replies
        assert isinstance(reply.response, HeartbeatReply)
        if self._gate is not None:
            return self._gate.checked(command, reply.response)
        return reply.response

    async def submit(self, command: Command[R]) -> R:
        """Run one command; resolves when its reply may be sent (maybe much later: parked).

        The reply is the command's own reply type: the core answers a command's token only
        with the reply its `Command[R]` declares (the cast in `submit_then` states that
        contract)."""
        future: asyncio.Future[R] = self._running_loop().create_future()
        token = self.submit_then(command, functools.partial(_resolve, future))
        if token is None:  # fast path (fetches, describes): answered, nothing to make durable
            return future.result()
        try:
            return await future
        finally:
            self._waiting.pop(token, None)

    def submit_then(self, command: Command[R], deliver: Callable[[R], None]) -> int | None:
        """Run one command and hand its reply to `deliver` once it may be sent: before this
        returns when the core answers at once with nothing to make durable, otherwise from the
        loop when the core answers and the answer's records are durable (a parked JoinGroup
        or SyncGroup: the round completes; a commit: its fsync).

        `submit` without a task or a future per request: the wire server parks a request as a
        slot of its connection's queue and `deliver` fills the slot. `deliver` is called
        exactly once (the core answers every token it parks: at the end of the round, at a
        timeout, when superseded or unloaded), even if the client went away meanwhile, and
        must not raise.

        Returns None when `deliver` was given the reply at once, else the token the request
        is parked under (what `submit` forgets it by)."""
        self._next_token += 1
        token = self._next_token
        result = self.core.handle(command, self._clock.now_ms(), token)
        if self._answers_now(result, token):
            self._carry_out(result)
            response = result.replies[0].response
            if self._gate is not None:
                response = self._gate.checked(command, response)
            deliver(cast(R, response))
            return None
        self._waiting[token] = (deliver, command)
        self._carry_out(result)
        return token

    def _answers_now(self, result: Result, token: int) -> bool:
        return (
            not result.records
            and len(result.replies) == 1
            and result.replies[0].token == token
            and self._pending_write() is None
        )

    def topics_changed(self, metadata: TopicMetadata) -> None:
        """The node's topics changed (created, grown, deleted): consumer groups subscribed to
        them get a new group epoch and target assignment; their records go to the store like
        any other write."""
        self._running_loop()
        self._carry_out(self.core.topics_changed(metadata, self._clock.now_ms()))

    async def topics_deleted(self, topics: list[str]) -> None:
        """Remove the committed offsets of deleted topics; returns once that is durable (a
        failed write is logged and its partitions reloaded, as for any write)."""
        self._running_loop()
        self._carry_out(self.core.topics_deleted(topics, self._clock.now_ms()))
        barrier = self._pending_write()
        if barrier is not None:
            await asyncio.wait([barrier])

    # -- effects --------------------------------------------------------------------------
    def _carry_out(
        self, result: Result, encode: Callable[[Record], StoredRecord] = record_codec.encode
    ) -> None:
        if not (
            result.replies or result.timers or result.records or result.events or result.offloaded
        ):
            return  # a request parked with nothing else to do (most of a round's)
        # (Each step only when it has something to do: a SyncGroup after the leader's has a
        # reply and nothing else.)
        if result.events:
            self._log_events(result)
        if result.timers:
            self._carry_out_timers(result)
        if result.offloaded:
            self._targets.offload(result)
        if result.records:
            barrier: asyncio.Future[None] | None = self._enqueue_write(result.records, encode)
        else:
            barrier = self._pending_write()
        if not result.replies:
            return
        if barrier is None:
            self._deliver(result)
            return
        held = self._held
        if held is not None and held[0] is barrier:
            held[1].append(result)  # answered after the results before it, as before
            return
        results = [result]
        self._held = (barrier, results)
        barrier.add_done_callback(functools.partial(self._after_writes, results))

    def _after_writes(self, results: list[Result], write: asyncio.Future[None]) -> None:
        """`write` is done: the results that waited for it, in the order they came."""
        if self._held is not None and self._held[1] is results:
            self._held = None
        if write.cancelled() or write.exception() is None:
            for result in results:  # (`_after_write`'s first case, the write checked once)
                self._deliver(result)
            return
        for result in results:
            self._after_write(write, result)

    def _log_events(self, result: Result) -> None:
        if result.events:
            log_group_events(
                result.events
            )  # the server log's INFO lines (coordinator.groups.group_log)
            if self.events is not None:
                self.events.emit(result.events, self._epoch_offset)

    def _carry_out_timers(self, result: Result) -> None:
        """Apply timer effects (lazily: a later deadline for an armed key only updates the
        deadline; heartbeats push session timers forward thousands of times a second)."""
        timers = self._timers
        for effect in result.timers:
            if isinstance(effect, Cancel):
                timers.cancel(effect.key)
            else:
                timers.schedule(effect.key, effect.deadline_ms)

    def _loop_time(self, deadline_ms: int) -> float:
        return (deadline_ms + self._offset_ms) / 1000

    def _on_timer(self, key: Hashable, now_ms: int) -> None:
        self._carry_out(self.core.on_timer(cast(TimerKey, key), now_ms))

    def _pending_write(self) -> asyncio.Future[None] | None:
        """The newest write not yet durable: replies must not overtake it."""
        if self._batch_future is not None:
            return self._batch_future
        if self._last_write is not None and not self._last_write.done():
            return self._last_write
        return None

    def _enqueue_write(
        self, records: list[Record], encode: Callable[[Record], StoredRecord] = record_codec.encode
    ) -> asyncio.Future[None]:
        """Add records to the batch written at the end of this loop iteration.

        Every result handled in one iteration shares one store append (and the store folds
        concurrent appends into one transaction and fsync): group commit at both levels.
        """
        if self._batch_future is None:
            loop = self._running_loop()
            self._batch_future = loop.create_future()
            loop.call_soon(self._flush)
        self._batch.extend(record_codec.placed(encode, records, self.core.partition_for))
        return self._batch_future

    def _flush(self) -> None:
        batch, done = self._batch, self._batch_future
        assert done is not None
        self._batch, self._batch_future = [], None
        self._last_write = done
        # Straight to the store's queue, and `done` settled from the loop callback that the
        # store's writer makes once per transaction: the replies a write releases go out
        # in the loop iteration after its fsync, not several iterations (of other requests'
        # work) later behind a task, a shield and their futures.
        try:
            self.store.append_then(batch, functools.partial(_written, done))
        except Exception as exc:  # a closed store: the same as a failed write
            done.set_exception(exc)

    def _after_write(self, write: asyncio.Future[None], result: Result) -> None:
        if write.cancelled() or write.exception() is None:
            self._deliver(result)
            return
        now = time.monotonic()
        if now - self._failure_logged_at >= _WRITE_FAILURE_LOG_EVERY:
            more = self._failures_unlogged
            log.error(
                "store write failed, reloading affected partitions: %s%s",
                write.exception(),
                f" ({more} more failed writes since the last report)" if more else "",
            )
            self._failure_logged_at, self._failures_unlogged = now, 0
        else:
            self._failures_unlogged += 1
        for reply in result.replies:
            entry = self._waiting.pop(reply.token, None)
            if entry is not None:
                _hand_over(entry[0], entry[1].error_reply(ErrorCode.NOT_COORDINATOR))
        partitions = sorted({self.core.partition_for(r.group_id) for r in result.records})
        error = write.exception()
        if isinstance(error, FencedError):  # taken over by another node: not ours to reload
            for p in error.partitions:
                self.resign(p)
            partitions = [p for p in partitions if p not in error.partitions]
        if partitions:
            self._running_loop().create_task(self._reload(partitions))

    async def _reload(self, partitions: list[int]) -> None:
        partitions = [p for p in partitions if p not in self._reloading]
        self._reloading.update(partitions)
        try:
            await self._reload_now(partitions)
        finally:
            self._reloading.difference_update(partitions)

    async def _reload_now(self, partitions: list[int]) -> None:
        for p in partitions:
            self.resign(p)
        await self._load(partitions)

    def _deliver(self, result: Result, gated: bool = True) -> None:
        waiting = self._waiting
        gate = self._gate if gated else None
        for reply in result.replies:
            entry = waiting.pop(reply.token, None)
            if entry is not None:
                response = (
                    reply.response if gate is None else gate.checked(entry[1], reply.response)
                )
                try:  # (`_hand_over`, inlined: a round delivers a thousand replies at once)
                    entry[0](response)
                except Exception:
                    log.exception("delivering a reply failed")

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _hand_over(deliver: Callable[[Any], None], reply: object) -> None:
    """Give a parked request its reply; a failing receiver must not cost the others theirs."""
    try:
        deliver(reply)
    except Exception:
        log.exception("delivering a reply failed")


def _written(done: asyncio.Future[None], error: BaseException | None) -> None:
    """A store write's outcome, passed on to the future the batch's results wait on."""
    if done.done():
        return
    if error is None:
        done.set_result(None)
    elif isinstance(error, asyncio.CancelledError):
        done.cancel()
    else:
        done.set_exception(error)
