"""One ZooKeeper session for asyncio code: kazoo underneath, every call awaited.

Why kazoo: it is the maintained standard Python client (python-zk), tested by its own CI against
ZooKeeper 3.6-3.9, and its session handling is what the 0.8 design leans on: SUSPENDED (the
connection dropped, the session may survive) is kept apart from LOST (the session expired, so
its ephemeral znodes are gone), and after a LOST it opens a new session by itself, as 0.8's
ZkClient does before calling `handleNewSession`. Its asyncio wrapper (`kazoo.aio`) was never
released (2.11.0 has none), so this module bridges it: each request goes through kazoo's
`*_async` call, whose completion kazoo reports on its callback thread; we hand the result to
the event loop with `call_soon_threadsafe`. Watches and session-state changes cross the same
way. The price is two threads per session (kazoo's connection and callback threads) and
requests that cannot be cancelled once sent (a cancelled await just drops the answer).
aiozk, the asyncio-native alternative, retries every request forever by default
(`RetryPolicy.forever()`), which hides exactly the session loss the rebalance must see.

Errors are translated into this module's exceptions, so nothing above it imports kazoo; `ops`
counts the requests sent, for "ZooKeeper operations per rebalance".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from coordinator.errors import OperationalError

log = logging.getLogger("coordinator.zookeeper")


class ZooKeeperError(OperationalError):
    """A ZooKeeper request failed (an operational error where it reaches a command)."""


class NodeExists(ZooKeeperError):
    """The znode to create is there already."""


class NoNode(ZooKeeperError):
    """The znode (or its parent) does not exist."""


class NotEmpty(ZooKeeperError):
    """The znode to delete has children."""


class SessionLost(ZooKeeperError):
    """The connection dropped or the session expired while the request was outstanding."""


class ConnectTimeout(ZooKeeperError):
    """No ZooKeeper server could be reached in time."""


def _translate(error: BaseException) -> BaseException:
    if isinstance(error, NodeExistsError):
        return NodeExists(str(error) or "node exists")
    if isinstance(error, NoNodeError):
        return NoNode(str(error) or "no node")
    if isinstance(error, NotEmptyError):
        return NotEmpty(str(error) or "not empty")
    if isinstance(error, SessionExpiredError | ConnectionLoss):
        return SessionLost(type(error).__name__)
    if isinstance(error, KazooException | ZookeeperError):
        return ZooKeeperError(f"{type(error).__name__}: {error}")
    return error


@dataclass(frozen=True, slots=True)
class Stat:
    """The parts of a znode's stat the consumer uses."""

    version: int
    modified_zxid: int
    ephemeral_owner: int


WatchCallback = Callable[[str, str], None]
"""Called on the event loop with (event kind, path): kind is created/deleted/changed/child."""
StateCallback = Callable[[str, bool], None]
"""Called on the event loop with (state, new_session): state is connected/suspended/lost;
`new_session` is true on the first `connected` after a lost session."""

_EVENT_KINDS = {
    EventType.CREATED: "created",
    EventType.DELETED: "deleted",
    EventType.CHANGED: "changed",
    EventType.CHILD: "child",
}


class ZooKeeper:
    """A ZooKeeper session. `connect` is `HOST:PORT[,HOST:PORT...][/chroot]`."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 6000,
        connection_timeout_ms: int | None = None,
        on_state: StateCallback | None = None,
    ) -> None:
        self.connect = connect
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self.ops = 0
        self._on_state = on_state
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kazoo: Any = None
        self._session_id: int | None = None
        self._watchers: dict[WatchCallback, Callable[[WatchedEvent], None]] = {}
        self._closed = False

    @property
    def session_id(self) -> int | None:
        return self._session_id

    @property
    def kazoo_client_id(self) -> tuple[int, bytes] | None:
        """(session id, password) of the live session (what `steal_session` needs)."""
        client_id: tuple[int, bytes] | None = (
            self._kazoo.client_id if self._kazoo is not None else None
        )
        return client_id

    async def start(self) -> None:
        """Connect and open a session (creating the chroot if it is missing, as 0.8.2's broker
        does); raises `ConnectTimeout` after `connection_timeout_ms`."""
        self._loop = asyncio.get_running_loop()
        hosts, _, chroot = self.connect.partition("/")
        self._kazoo = KazooClient(hosts=hosts, timeout=self.session_timeout_ms / 1000)
        self._kazoo.add_listener(self._state_changed)
        started = self._kazoo.start_async()
        ready = await asyncio.to_thread(started.wait, self.connection_timeout_ms / 1000)
        if not ready or not self._kazoo.connected:
            await self.close()
            raise ConnectTimeout(
                f"no ZooKeeper session at {hosts} after {self.connection_timeout_ms} ms"
            )
        self._session_id = self._kazoo.client_id[0]
        if chroot:
            await self._call(self._kazoo.ensure_path_async, "/" + chroot.strip("/"))
            self._kazoo.chroot = "/" + chroot.strip("/")

    async def close(self) -> None:
        """End the session (its ephemeral znodes go at once) and stop kazoo's threads."""
        if self._closed or self._kazoo is None:
            return
        self._closed = True
        client = self._kazoo
        await asyncio.to_thread(client.stop)
        await asyncio.to_thread(client.close)

    # -- requests ------------------------------------------------------------------------

    async def create(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False, makepath: bool = False
    ) -> str:
        created = await self._call(
            self._kazoo.create_async, path, data, ephemeral=ephemeral, makepath=makepath
        )
        return str(created)

    async def ensure_path(self, path: str) -> None:
        await self._call(self._kazoo.ensure_path_async, path)

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        data, stat = await self._call(self._kazoo.get_async, path, watch=self._watcher(watch))
        return bytes(data or b""), Stat(stat.version, stat.mzxid, stat.ephemeralOwner)

    async def get_or_none(
        self, path: str, watch: WatchCallback | None = None
    ) -> tuple[bytes, Stat] | None:
        """The znode's data and stat, or None when it does not exist. A watch is left on the
        znode either way (an `exists` watch when it is missing)."""
        try:
            return await self.get(path, watch)
        except NoNode:
            if watch is not None and await self.exists(path, watch):
                return await self.get_or_none(path, watch)  # created in between
            return None

    async def exists(self, path: str, watch: WatchCallback | None = None) -> bool:
        stat = await self._call(self._kazoo.exists_async, path, watch=self._watcher(watch))
        return stat is not None

    async def children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        """The znode's children; [] when it does not exist (`getChildrenParentMayNotExist`)."""
        try:
            names = await self._call(
                self._kazoo.get_children_async, path, watch=self._watcher(watch)
            )
        except NoNode:
            if watch is not None and await self.exists(path, watch):
                return await self.children(path, watch)
            return []
        return list(names)

    async def set(self, path: str, data: bytes) -> None:
        await self._call(self._kazoo.set_async, path, data)

    async def delete(self, path: str, *, missing_ok: bool = True) -> bool:
        """Delete a znode; False if it was not there (0.8's `deletePath`)."""
        try:
            await self._call(self._kazoo.delete_async, path)
        except NoNode:
            if not missing_ok:
                raise
            return False
        return True

    async def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = self._loop
        assert loop is not None, "start() the session first"
        self.ops += 1
        future: asyncio.Future[Any] = loop.create_future()

        def settle(outcome: Any, error: BaseException | None) -> None:
            if future.done():  # the awaiting task was cancelled
                return
            if error is not None:
                future.set_exception(_translate(error))
            else:
                future.set_result(outcome)

        def completed(async_result: Any) -> None:  # on kazoo's callback thread
            try:
                outcome, error = async_result.get_nowait(), None
            except (KazooException, ZookeeperError, KazooTimeoutError) as exc:
                outcome, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
                loop.call_soon_threadsafe(settle, outcome, error)

        try:
            method(*args, **kwargs).rawlink(completed)
        except (KazooException, ZookeeperError) as exc:
            raise _translate(exc) from None
        return await future

    # -- watches and session state --------------------------------------------------------

    def _watcher(self, callback: WatchCallback | None) -> Callable[[WatchedEvent], None] | None:
        """One kazoo watch function per callback, so kazoo's per-path set keeps one of each."""
        if callback is None:
            return None
        existing = self._watchers.get(callback)
        if existing is not None:
            return existing
        loop = self._loop
        assert loop is not None

        def fired(event: WatchedEvent) -> None:  # on kazoo's callback thread
            kind = _EVENT_KINDS.get(event.type)
            if kind is None:  # EventType.NONE: kazoo dropped its watches on a disconnect
                return
            path = event.path
            if self._kazoo is not None and self._kazoo.chroot:
                path = self._kazoo.unchroot(path)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(callback, kind, path)

        self._watchers[callback] = fired
        return fired

    def _state_changed(self, state: str) -> None:  # on kazoo's connection thread
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._report_state, state)

    def _report_state(self, state: str) -> None:
        if self._closed:
            return
        name = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended"}.get(
            state, "lost"
        )
        new_session = False
        if name == "connected":
            client_id = self._kazoo.client_id
            session = client_id[0] if client_id else None
            new_session = self._session_id is not None and session != self._session_id
            self._session_id = session
        log.info("ZooKeeper session %s%s", name, " (new session)" if new_session else "")
        if self._on_state is not None and self._session_id is not None:
            self._on_state(name, new_session)
