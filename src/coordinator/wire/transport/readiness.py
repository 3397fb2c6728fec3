"""Every plaintext connection's read readiness behind one descriptor of the event loop.

asyncio's selector loop pays, for each socket that becomes readable, a selector key lookup, a
ready tuple, a `Handle` queued and run inside `Context.run` — about a microsecond and a half of
its own Python per event, before the transport reads a byte. A 1000-member rebalance over
loopback has 2000 such events (a JoinGroup and a SyncGroup per member). `ReadinessHub` keeps the
plaintext connections in an epoll set of its own whose descriptor is the only one the loop
watches for them: when the loop finds it readable, one callback polls the set and calls each
ready connection's read callback in a plain loop.

What stays asyncio's: write readiness (registered only while a write is incomplete, which is
rare), the listening sockets, TLS connections, timers and callbacks. The epoll set is
level-triggered like the loop's own, so a connection with unread bytes (more than one `recv`
takes, or more than one poll returns) is reported again on the next pass of the loop, and a
connection whose reading is paused is simply not in the set. Linux only (epoll); where
`select.epoll` is missing the transport registers with the loop itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
import weakref
from collections.abc import Callable
from typing import Final

logger = logging.getLogger("coordinator.wire")

#: Events taken from the set per pass of the loop (the rest wait for the next pass, as the
#: loop's own selector would leave them).
_EVENTS_PER_PASS: Final = 1024

_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ReadinessHub] = (
    weakref.WeakKeyDictionary()
)


class ReadinessHub:
    """One loop's epoll set of readable-watched sockets (see the module docstring).

    Made on the first `hold` or `watch` of a loop and closed once nothing holds it and no socket
    is watched. The acceptors hold it while they listen, so that it is made when the server
    starts, not when a connection arrives: a node out of descriptors (see
    `coordinator.wire.transport.acceptor`) still serves the connections it can accept.
    """

    __slots__ = ("__weakref__", "_epoll", "_holders", "_loop", "_readers")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._epoll = select.epoll()
        #: fd -> the callback that reads it.
        self._readers: dict[int, Callable[[], None]] = {}
        self._holders = 0
        loop.add_reader(self._epoll.fileno(), self._dispatch)

    @staticmethod
    def available(loop: asyncio.AbstractEventLoop) -> bool:
        return hasattr(select, "epoll") and not loop.is_closed()

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> ReadinessHub:
        hub = _hubs.get(loop)
        if hub is None:
            hub = _hubs[loop] = cls(loop)
        return hub

    @classmethod
    def hold(cls, loop: asyncio.AbstractEventLoop) -> ReadinessHub:
        """The loop's hub, kept open until `release` (besides while sockets are watched)."""
        hub = cls.of(loop)
        hub._holders += 1
        return hub

    def release(self) -> None:
        self._holders -= 1
        if not self._holders and not self._readers:
            self._close()

    def watch(self, fd: int, on_readable: Callable[[], None]) -> None:
        """Call `on_readable` whenever `fd` has bytes (or an end or error) to read."""
        self._epoll.register(fd, select.EPOLLIN)
        self._readers[fd] = on_readable

    def unwatch(self, fd: int) -> None:
        if self._readers.pop(fd, None) is None:
            return
        with contextlib.suppress(OSError):  # (already closed: the kernel dropped it)
            self._epoll.unregister(fd)
        if not self._readers and not self._holders:
            self._close()

    def _close(self) -> None:
        if _hubs.get(self._loop) is self:
            del _hubs[self._loop]
        if not self._loop.is_closed():
            self._loop.remove_reader(self._epoll.fileno())
        self._epoll.close()

    def _dispatch(self) -> None:
        readers = self._readers
        for fd, _events in self._epoll.poll(0, _EVENTS_PER_PASS):
            on_readable = readers.get(fd)
            if on_readable is None:
                continue  # unwatched by an earlier callback of this pass
            try:
                on_readable()
            except Exception:  # (the transports catch their protocols' errors themselves)
                logger.exception("a read callback failed on descriptor %d", fd)


__all__ = ["ReadinessHub"]
