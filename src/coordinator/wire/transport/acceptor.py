"""Accepting connections on one listening socket, within the node's connection quotas and file
descriptors.

Why not `loop.create_server`: its accept loop cannot be told to wait, and it counts nothing.
This one (a reader callback on the listening socket; each accepted plaintext socket served by
`coordinator.wire.transport.socket_transport.SocketTransport`, a transport a third the size of
asyncio's, and each TLS one handed to `loop.connect_accepted_socket`, which does the TLS handshake
as
`create_server` would):
- closes at once a connection over its address's `max.connections.per.ip` limit, before any TLS
  handshake, as Kafka does;
- stops accepting while the node holds `max.connections`, so that new clients wait in the listen
  backlog until a connection closes (Kafka's acceptor waits for a slot the same way), and waits
  as long as `max.connection.creation.rate` asks between accepts;
- survives running out of file descriptors (EMFILE/ENFILE): it keeps one spare descriptor
  open, and when accept fails for want of one it closes the spare, accepts the waiting client,
  closes that socket at once (the client sees its connection closed, not a hang in the
  backlog) and reopens the spare. Existing connections are untouched, and the next accept after
  descriptors free up succeeds. If even the spare is gone, it retries accepting a moment later.
"""

from __future__ import annotations

import asyncio
import asyncio.selector_events
import errno
import logging
import os
import socket
import ssl
import time
from collections.abc import Callable
from typing import Final

from coordinator.wire.transport.connection_quotas import ConnectionQuotas
from coordinator.wire.transport.readiness import ReadinessHub
from coordinator.wire.transport.socket_transport import SocketTransport

logger = logging.getLogger("coordinator.wire")

#: Connections accepted per readiness callback, so a flood does not starve the loop.
_ACCEPTS_PER_WAKEUP: Final = 64
#: Seconds to wait before accepting again when the process has no descriptor to spare.
_RETRY_DELAY: Final = 0.1
#: Seconds between two warnings about refused connections of one kind.
_WARN_EVERY: Final = 10.0

_OUT_OF_DESCRIPTORS: Final = frozenset({errno.EMFILE, errno.ENFILE})
_OUT_OF_MEMORY: Final = frozenset({errno.ENOBUFS, errno.ENOMEM})


class Ticket:
    """One admitted connection's place in the quotas, given back once (idempotent)."""

    __slots__ = ("_on_release", "address", "released")

    def __init__(self, address: str, on_release: Callable[[Ticket], None]) -> None:
        self.address = address
        self.released = False
        self._on_release = on_release

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._on_release(self)


class _RateLimitedWarning:
    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def __call__(self, kind: str, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last.get(kind, -_WARN_EVERY) < _WARN_EVERY:
            self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
            return
        self._last[kind] = now
        more = self._suppressed.pop(kind, 0)
        suffix = f" ({more} more like it since the last warning)" if more else ""
        logger.warning(message + suffix, *args)


warn_refused = _RateLimitedWarning()


class Acceptor:
    """Accepts on one listening socket; see the module docstring."""

    def __init__(
        self,
        listener: socket.socket,
        tls: ssl.SSLContext | None,
        quotas: ConnectionQuotas,
        protocol_factory: Callable[[Ticket], asyncio.Protocol],
        on_release: Callable[[Ticket], None],
        listener_quotas: ConnectionQuotas | None = None,
    ) -> None:
        self._listener = listener
        self._tls = tls
        self._quotas = quotas
        #: This listener's own limits (`listener.name.NAME.max.connections`, its creation
        #: rate), counted besides the node's: a connection takes a place in both.
        self._listener_quotas = listener_quotas
        self._protocol_factory = protocol_factory
        self._on_release = on_release
        self._loop = asyncio.get_running_loop()
        self._accepting = False
        self._closed = False
        self._retry: asyncio.TimerHandle | None = None
        self._handshakes: set[asyncio.Task[object]] = set()
        self._spare = _open_spare()
        #: Plaintext connections get `SocketTransport` on asyncio's own selector loops; another
        #: loop (uvloop) keeps its native transports, which are cheaper than any in Python.
        self._lean = isinstance(self._loop, asyncio.selector_events.BaseSelectorEventLoop)
        #: Their reading's epoll set, made now rather than when the first client arrives.
        self._hub = (
            ReadinessHub.hold(self._loop)
            if self._lean and ReadinessHub.available(self._loop)
            else None
        )
        listener.setblocking(False)

    def __repr__(self) -> str:
        state = "accepting" if self._accepting else "paused"
        return f"<Acceptor {self._listener.getsockname()} {state}>"

    def resume(self) -> None:
        """Accept again (after start, a pause for the node-wide limit, or a retry delay)."""
        if self._closed or self._accepting:
            return
        self._accepting = True
        self._loop.add_reader(self._listener.fileno(), self._on_readable)

    def pause(self) -> None:
        if self._accepting:
            self._accepting = False
            self._loop.remove_reader(self._listener.fileno())

    def close(self) -> None:
        """Stop accepting and close the listening socket (open connections stay)."""
        self.pause()
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
        for task in self._handshakes:
            task.cancel()
        self._listener.close()
        if self._hub is not None:
            self._hub.release()
            self._hub = None
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None

    def _on_readable(self) -> None:
        own = self._listener_quotas
        for _ in range(_ACCEPTS_PER_WAKEUP):
            if self._quotas.full or (own is not None and own.full):
                self.pause()  # the server resumes every acceptor once a connection closes
                return
            now = time.monotonic()
            delay = self._quotas.accept_delay(now)
            if own is not None:
                delay = max(delay, own.accept_delay(now))
            if delay > 0:
                self._retry_in(delay)
                return
            try:
                sock, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if not self._accept_failed(exc):
                    return
                continue
            self._accepted(sock, peer)

    def _accept_failed(self, exc: OSError) -> bool:
        """Handle a failed accept; True to try accepting again at once."""
        if exc.errno in _OUT_OF_DESCRIPTORS:
            warn_refused(
                "descriptors",
                "out of file descriptors (%s): refusing new connections until some close",
                exc.strerror,
            )
            if self._spare is not None:
                self._refuse_one()
                return True
            self._spare = _open_spare()
        elif exc.errno in _OUT_OF_MEMORY:
            warn_refused("memory", "accept failed (%s); retrying shortly", exc.strerror)
        else:  # the client gave up before we accepted it (ECONNABORTED, ...)
            return True
        self._retry_in(_RETRY_DELAY)
        return False

    def _retry_in(self, delay: float) -> None:
        self.pause()
        if self._retry is not None:
            self._retry.cancel()
        self._retry = self._loop.call_later(delay, self.resume)

    def _refuse_one(self) -> None:
        """Use the spare descriptor to take one waiting client off the backlog and close it."""
        assert self._spare is not None
        os.close(self._spare)
        self._spare = None
        try:
            sock, _peer = self._listener.accept()
        except OSError:
            pass
        else:
            sock.close()
        self._spare = _open_spare()

    def _accepted(self, sock: socket.socket, peer: object) -> None:
        address = peer[0] if isinstance(peer, tuple) else str(peer)
        now = time.monotonic()
        refused = self._quotas.admit(address, now)
        if refused is not None:
            warn_refused("per-ip", "refusing a connection: %s (max.connections.per.ip)", refused)
            sock.close()
            return
        if self._listener_quotas is not None:
            self._listener_quotas.admit(address, now)  # no per-address limit: never refuses
        ticket = Ticket(address, self._on_release)
        if self._tls is None and self._lean:
            # Plaintext: served by the lean transport, opened here (no task, no handshake).
            try:
                SocketTransport.open(self._loop, sock, self._protocol_factory(ticket))
            except Exception as exc:
                logger.info("connection from %s failed to open: %s", address, exc)
                sock.close()
                ticket.release()
            return
        connecting = self._loop.create_task(
            self._loop.connect_accepted_socket(
                lambda: self._protocol_factory(ticket), sock, ssl=self._tls
            )
        )
        self._handshakes.add(connecting)
        connecting.add_done_callback(lambda task: self._connected(task, ticket, sock))

    def _connected(self, task: asyncio.Task[object], ticket: Ticket, sock: socket.socket) -> None:
        self._handshakes.discard(task)
        if task.cancelled() or task.exception() is not None:
            if not task.cancelled():
                logger.info("connection from %s failed to open: %s", ticket.address,
                            task.exception())  # fmt: skip
            sock.close()
            ticket.release()


def _open_spare() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return None
