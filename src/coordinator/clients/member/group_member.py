"""`GroupMember`: a classic-protocol group member for asyncio services.

The protocol lives in the pure `rebalance.member.ClassicMember`; this is its shell. One task
runs the loop: ask the member what to send (`poll`), send it on the right connection (the
bootstrap servers for FindCoordinator and Metadata, the coordinator for the group requests),
hand back the reply or the failure, and sleep until the member's next wake-up, a reply, or a
callback finishing. Callbacks run in their own task and are awaited before the member goes on
(the pure member sends no JoinGroup or LeaveGroup while they run, as Kafka's listener contract
requires); heartbeats continue meanwhile.

Usage::

    async with GroupMember("localhost:9092", "billing", ["orders"],
                           on_assigned=start, on_revoked=stop, on_lost=drop) as member:
        async for change in member.changes():
            ...

`commit()` is fenced by the generation that gave the partitions and raises the
`coordinator.clients.member.errors` hierarchy (retriable `RebalanceInProgress` while the member
rejoins, final `CommitFailed` once the generation is gone); `committed()` reads the group's
offsets. Callbacks may be coroutine functions or plain functions. Leaving the `async with`
revokes everything (callbacks awaited), sends LeaveGroup (dynamic members; a static member keeps
its place until its session times out, as KIP-345 intends) and closes the connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from assignors.spec import TopicPartition
from coordinator.clients.member import wire
from coordinator.clients.member.connection import Connection, ConnectionLost
from coordinator.clients.member.errors import (
    CommitFailed,
    CommitTimedOut,
    OffsetFetchFailed,
    RebalanceInProgress,
)
from coordinator.clients.member.links import Links
from coordinator.clients.member.options import (
    Callback,
    build_member,
    parse_servers,
    require_callable,
)
from coordinator.wire.api_keys import ApiKey
from rebalance.commands import OffsetCommit
from rebalance.errors import ErrorCode
from rebalance.member import (
    Assigned,
    Change,
    ClassicMember,
    DescribeTopics,
    EmbeddedProtocol,
    FindCoordinator,
    Lost,
    MemberState,
    Revoked,
)
from rebalance.member.consumer import ConsumerMember
from rebalance.member.messages import CommitRefused, FindCoordinatorReply, MemberFailed

log = logging.getLogger(__name__)


class GroupMember:
    """One member of a Kafka group (classic protocol), for asyncio; see the module docstring."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        group_id: str,
        topics: Iterable[str] = (),
        *,
        topic_regex: str | None = None,
        protocol: EmbeddedProtocol | None = None,
        group_protocol: str = "classic",
        assignors: Sequence[str] = ("cooperative-sticky",),
        server_assignor: str | None = None,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 300_000,
        heartbeat_interval_ms: int | None = None,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        client_id: str = "rebalance-member",
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        on_lost: Callback | None = None,
    ) -> None:
        servers = parse_servers(bootstrap_servers)
        self.member: ClassicMember | ConsumerMember = build_member(
            group_id,
            topics,
            topic_regex=topic_regex,
            protocol=protocol,
            group_protocol=group_protocol,
            assignors=assignors,
            server_assignor=server_assignor,
            group_instance_id=group_instance_id,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            retry_backoff_ms=retry_backoff_ms,
            client_id=client_id,
        )
        self._request_timeout_s = request_timeout_ms / 1000
        for name, callback in (("on_assigned", on_assigned), ("on_revoked", on_revoked),
                               ("on_lost", on_lost)):  # fmt: skip
            require_callable(name, callback)
        self._callbacks: dict[type, Callback | None] = {
            Assigned: on_assigned,
            Revoked: on_revoked,
            Lost: on_lost,
        }
        self._links = Links(servers, client_id, self._request_timeout_s)
        self._coordinator_node = -1
        self._session_learned = False
        self._wake = asyncio.Event()
        self._subscribers: list[asyncio.Queue[Change | None]] = []
        self._task: asyncio.Task[None] | None = None
        self._in_flight: asyncio.Task[Any] | None = None
        self._callback_task: asyncio.Task[None] | None = None
        self._stable = asyncio.Event()
        #: Requests sent, by type name (FindCoordinator, JoinGroup, Heartbeat, ...).
        self.sent: Counter[str] = Counter()

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> GroupMember:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self, timeout_s: float | None = None) -> None:
        """Revoke (callbacks awaited), leave the group, close the connections; after
        `timeout_s` (default: the request timeout) stop without waiting any longer."""
        self.member.close()
        self._wake.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(
                    asyncio.shield(self._task), timeout_s or self._request_timeout_s
                )
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            finally:
                await self._shutdown()

    def kill(self) -> None:
        """Stop at once without leaving (tests: what a crashed process looks like to the group).
        Its callback and request tasks are cancelled here too: a crashed process runs no callback
        after the crash, even one already scheduled."""
        for task in (self._task, self._in_flight, self._callback_task):
            if task is not None:
                task.cancel()
        self._links.close()

    # -- what the application sees --------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self.member.member_id

    @property
    def generation(self) -> int:
        return self.member.generation

    @property
    def failure(self) -> MemberFailed | None:
        return self.member.failure

    def owned(self) -> frozenset[TopicPartition]:
        """What this member may work on now, while its ownership lease holds: a partition is in
        it from just before `on_assigned` is called with it until `on_revoked` for it returned,
        or until just before `on_lost` is called (docs/member.md, "What owned() means")."""
        return self.member.owns(self._now_ms())

    async def changes(self) -> AsyncIterator[Change]:
        """Every assignment change from now on, in order, until the member stops."""
        queue: asyncio.Queue[Change | None] = asyncio.Queue()
        self._subscribers.append(queue)
        try:
            while (change := await queue.get()) is not None:
                yield change
        finally:
            self._subscribers.remove(queue)

    async def wait_stable(self, timeout_s: float | None = None) -> frozenset[TopicPartition]:
        """Wait until the member holds its assignment with every callback done (classic: a
        synced generation, no rebalance pending; consumer protocol: reconciled)."""
        await asyncio.wait_for(self._stable.wait(), timeout_s)
        return self.owned()

    async def commit(self, offsets: Mapping[TopicPartition, int], *, metadata: str = "") -> None:
        """Commit offsets of owned partitions, fenced by the generation that gave them.

        Retriable errors (coordinator moving or loading) are retried after the backoff with a
        fresh check of ownership until the request timeout (then CommitTimedOut). While the
        member rejoins (joined, not yet synced; or answered REBALANCE_IN_PROGRESS):
        RebalanceInProgress, commit again once it is done. CommitFailed when the partitions are
        not this member's any more (or never were), with Kafka's error code when there is one.
        """
        backoff = self.member.config.retry_backoff_ms / 1000
        deadline = asyncio.get_running_loop().time() + self._request_timeout_s
        while True:
            try:
                request: OffsetCommit = self.member.commit(offsets, metadata=metadata)
            except CommitRefused as refused:
                if refused.retriable:
                    raise RebalanceInProgress(str(refused), refused.code) from None
                raise CommitFailed(str(refused), refused.code) from None
            except MemberFailed as failed:
                raise CommitFailed(str(failed), failed.code) from None
            try:
                connection = await self._coordinator_connection(deadline)
                (api, values) = wire.to_wire(request)
                response = await connection.request(*api, values, self._request_timeout_s)
            except ConnectionLost:
                self.member.on_commit_failure()
                self._wake.set()
                if asyncio.get_running_loop().time() > deadline:
                    raise CommitTimedOut("coordinator unreachable") from None
                await asyncio.sleep(backoff)
                continue
            outcome = self.member.on_commit_reply(request, wire.from_wire(request, response))
            self._wake.set()
            if outcome.ok:
                return
            message = f"commit failed: {outcome.error.name}"
            if outcome.error is ErrorCode.REBALANCE_IN_PROGRESS or outcome.rebalancing:
                raise RebalanceInProgress(message, outcome.error)
            if not outcome.retriable:
                raise CommitFailed(message, outcome.error)
            if asyncio.get_running_loop().time() > deadline:
                raise CommitTimedOut(message, outcome.error)
            await asyncio.sleep(backoff)

    async def committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offsets for `partitions` (None: nothing committed, as
        aiokafka's `committed()`). The member must be started (it finds the coordinator)."""
        if self._task is None:
            raise OffsetFetchFailed("start the member first: it finds the group's coordinator")
        deadline = asyncio.get_running_loop().time() + self._request_timeout_s
        api, values = wire.offset_fetch(self.member.config.group_id, list(partitions))
        try:
            connection = await self._coordinator_connection(deadline)
            response = await connection.request(*api, values, self._request_timeout_s)
        except ConnectionLost as exc:
            raise OffsetFetchFailed(f"offset fetch failed: {exc}") from None
        code = wire.error(response.error_code)
        if code is not ErrorCode.NONE:
            raise OffsetFetchFailed(f"offset fetch failed: {code.name}", code)
        found: dict[TopicPartition, int | None] = {}
        for topic in response.topics:
            for partition in topic.partitions:
                offset = int(partition.committed_offset)
                found[(topic.name, int(partition.partition_index))] = None if offset < 0 else offset
        return found

    # -- the loop -------------------------------------------------------------------------------

    def _now_ms(self) -> int:
        return int(asyncio.get_running_loop().time() * 1000)

    async def _run(self) -> None:
        member = self.member
        try:
            while member.state not in (MemberState.LEFT, MemberState.FAILED):
                self._run_callbacks()
                if self._in_flight is None:
                    request = member.poll(self._now_ms())
                    if request is not None:
                        self._in_flight = asyncio.get_running_loop().create_task(
                            self._exchange(request)
                        )
                        continue
                    if member.state in (MemberState.LEFT, MemberState.FAILED):
                        continue  # done without a request (a static member's close): stop
                self._run_callbacks()
                wakeup = member.next_wakeup_ms(self._now_ms())
                timeout = None if wakeup is None else max(wakeup - self._now_ms(), 0) / 1000
                waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._wake.wait())}
                if self._in_flight is not None:
                    waiters.add(self._in_flight)
                if self._callback_task is not None:
                    waiters.add(self._callback_task)
                done, _ = await asyncio.wait(
                    waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                for waiter in waiters:
                    if waiter is not self._in_flight and waiter is not self._callback_task:
                        waiter.cancel()
                self._wake.clear()
                if self._in_flight is not None and self._in_flight in done:
                    task, self._in_flight = self._in_flight, None
                    request, reply = task.result()
                    if reply is None:
                        member.on_failure(self._now_ms())
                    else:
                        if isinstance(reply, FindCoordinatorReply):
                            self._coordinator_node = reply.node_id
                        member.on_reply(reply, self._now_ms())
                    self._stable_changed()
                if self._callback_task is not None and self._callback_task.done():
                    self._callback_task = None
                    member.changes_done()
                    self._stable_changed()
            while self._callback_task is not None or member.has_changes:
                self._run_callbacks()
                if self._callback_task is not None:
                    await self._callback_task
                    self._callback_task = None
                    member.changes_done()
        finally:
            for queue in self._subscribers:
                queue.put_nowait(None)
            if member.failure is not None:
                log.error("group member %s failed: %s", member.member_id, member.failure)

    def _stable_changed(self) -> None:
        if self.member.settled:
            self._stable.set()
        else:
            self._stable.clear()

    def _run_callbacks(self) -> None:
        """Start the callbacks of the announced changes, unless earlier ones still run."""
        if self._callback_task is not None:
            return
        changes = self.member.take_changes()
        if changes:
            self._callback_task = asyncio.get_running_loop().create_task(self._announce(changes))

    async def _announce(self, changes: list[Change]) -> None:
        for change in changes:
            callback = self._callbacks[type(change)]
            if callback is not None:
                try:
                    outcome = callback(change.partitions)
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:
                    # DIFFERS: Java rethrows a listener's exception from poll() after the
                    # rebalance; a service has no poll(), so it is logged and the protocol goes on.
                    log.exception("%s callback failed", type(change).__name__)
            if isinstance(change, Revoked):
                self.member.revocation_done(change)
            for queue in self._subscribers:
                queue.put_nowait(change)

    async def _exchange(self, request: Any) -> tuple[Any, Any]:
        """Send one member request; (request, reply) or (request, None) when it failed."""
        try:
            if isinstance(request, (FindCoordinator, DescribeTopics)):
                connection = await self._links.bootstrap()
            else:
                connection = await self._links.coordinator(self.member.coordinator)
            coordinator_request = not isinstance(request, (FindCoordinator, DescribeTopics))
            consumer = isinstance(self.member, ConsumerMember)
            if coordinator_request and consumer and not self._session_learned:
                await self._learn_session_timeout(connection)
            (api, values) = wire.to_wire(request)
            self.sent[type(request).__name__] += 1
            timeout = self._request_timeout_s
            if api[0] == ApiKey.JOIN_GROUP:
                timeout = max(timeout, self.member.config.rebalance_timeout_ms / 1000)
                timeout += wire.JOIN_EXTRA_S
            response = await connection.request(*api, values, timeout)
        except ConnectionLost as exc:
            log.info("%s failed: %s", type(request).__name__, exc)
            return request, None
        except Exception:
            log.exception("%s: unreadable response", type(request).__name__)
            return request, None
        return request, wire.from_wire(request, response)

    async def _learn_session_timeout(self, connection: Connection) -> None:
        """KIP-848: the session is the coordinator's `group.consumer.session.timeout.ms` (a
        member does not send one); the lease is bounded by it, so it is asked for before the
        member joins (DescribeConfigs of the coordinator node). Unanswered: the configured
        `session_timeout_ms` stands, and a warning says so."""
        assert isinstance(self.member, ConsumerMember)
        if self._coordinator_node < 0:
            return
        self._session_learned = True
        api, values = wire.describe_broker_config(self._coordinator_node, wire.CONSUMER_SESSION)
        try:
            response = await connection.request(*api, values, self._request_timeout_s)
            value = wire.config_value(response, wire.CONSUMER_SESSION)
        except ConnectionLost:
            value = None
        if value is None:
            log.warning(
                "the coordinator did not say its %s: the lease assumes %d ms",
                wire.CONSUMER_SESSION, self.member.config.session_timeout_ms,
            )  # fmt: skip
            return
        self.member.learn_session_timeout(value)

    async def _coordinator_connection(self, deadline: float) -> Connection:
        """The coordinator's connection, waiting (until `deadline`) while it is rediscovered."""
        loop = asyncio.get_running_loop()
        while self.member.coordinator is None:
            if loop.time() > deadline or self.member.state in (
                MemberState.LEFT,
                MemberState.FAILED,
            ):
                raise ConnectionLost("coordinator unknown")
            await asyncio.sleep(self.member.config.retry_backoff_ms / 1000)
        return await self._links.coordinator(self.member.coordinator)

    async def _shutdown(self) -> None:
        for task in (self._in_flight, self._callback_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._links.wait_closed()
