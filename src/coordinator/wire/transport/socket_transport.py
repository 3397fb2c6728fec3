"""A plaintext TCP transport sized to what an idle connection holds.

asyncio's selector transport keeps, per connection, an instance `__dict__` of ~20 attributes,
an `extra` dict filled at once with the peer and local addresses (tuples and strings) and a
`TransportSocket` wrapper, a weak reference in the loop's transport table, an empty
`bytearray` write buffer and a bound read callback besides the loop's own reader registration,
per connection before a byte is read (RESULTS.md: figures behind the code). This transport is one
slotted object: the socket, the protocol, and a write
buffer that exists only while a write is incomplete; addresses are asked of the socket when
someone wants them. Reading is registered with the loop's `ReadinessHub` (one epoll set for
every plaintext connection, `coordinator.wire.transport.readiness`), not with the loop itself: no
handle or selector key per connection, and a readable socket costs no asyncio dispatch.

It implements what `coordinator.node.server` uses of `asyncio.Transport`, with asyncio's
semantics: `write` sends at once what the socket takes and buffers the rest behind a writer
callback; past the high-water mark (64 KiB, as asyncio) the protocol is told `pause_writing`,
and `resume_writing` once the buffer is down to the low-water mark (16 KiB);
`pause_reading`/`resume_reading` remove and re-add the reader; `close` stops reading, sends
what is buffered, then closes; `abort` closes at once; `eof_received` returning false closes;
`connection_lost` is called once, soon after the socket is done. TLS listeners keep asyncio's
transport (its TLS layer wraps one of asyncio's own).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any, Final

from coordinator.wire.transport.readiness import ReadinessHub

logger = logging.getLogger("coordinator.wire")

#: Bytes asked of one `recv` (asyncio's selector transport reads the same).
MAX_READ: Final = 256 * 1024
HIGH_WATER: Final = 64 * 1024
LOW_WATER: Final = 16 * 1024


#: The protocol of a transport whose connection is lost (every callback does nothing).
_GONE: Final = asyncio.Protocol()


class SocketTransport(asyncio.Transport):
    """One accepted plaintext TCP socket (see the module docstring)."""

    __slots__ = (
        "_buffer",
        "_closing",
        "_conn_lost",
        "_fd",
        "_high_water",
        "_hub",
        "_loop",
        "_low_water",
        "_protocol",
        "_protocol_paused",
        "_reading",
        "_sock",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol: asyncio.Protocol,
    ) -> None:
        # (asyncio.BaseTransport.__init__ would make an `extra` dict: not called.)
        self._loop = loop
        self._sock: socket.socket | None = sock
        self._fd = sock.fileno()
        self._protocol = protocol
        #: Bytes written but not yet taken by the socket (None while there are none).
        self._buffer: bytearray | None = None
        self._closing = False
        self._conn_lost = False
        self._reading = False
        self._protocol_paused = False
        self._high_water = HIGH_WATER
        self._low_water = LOW_WATER
        #: The loop's shared epoll set this socket's reading is registered with, while it is.
        self._hub: ReadinessHub | None = None

    @classmethod
    def open(
        cls, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol: asyncio.Protocol
    ) -> SocketTransport:
        """Serve an accepted socket: made non-blocking with Nagle off (as asyncio does), the
        protocol told `connection_made`, reading started."""
        sock.setblocking(False)
        with contextlib.suppress(OSError):  # (not TCP: a Unix socket)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport = cls(loop, sock, protocol)
        protocol.connection_made(transport)
        if not transport._closing:
            transport._start_reading()
        return transport

    def __repr__(self) -> str:
        state = "closed" if self._sock is None else "closing" if self._closing else "open"
        return f"<SocketTransport fd={self._fd} {state} buffered={self.get_write_buffer_size()}>"

    # -- extra info, asked of the socket --------------------------------------------------------
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        sock = self._sock
        if sock is None:
            return default
        try:
            if name == "peername":
                return sock.getpeername()
            if name == "sockname":
                return sock.getsockname()
        except OSError:
            return default
        if name == "socket":
            return sock
        return default

    # -- reading --------------------------------------------------------------------------------
    def _start_reading(self) -> None:
        if not self._reading:
            self._reading = True
            hub = ReadinessHub.of(self._loop) if ReadinessHub.available(self._loop) else None
            if hub is not None:
                hub.watch(self._fd, self._read_ready)
                self._hub = hub
            else:
                self._loop.add_reader(self._fd, self._read_ready)

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            if self._hub is not None:
                self._hub.unwatch(self._fd)
                self._hub = None
            else:
                self._loop.remove_reader(self._fd)

    def is_reading(self) -> bool:
        return self._reading

    def pause_reading(self) -> None:
        if not self._closing:
            self._stop_reading()

    def resume_reading(self) -> None:
        if not self._closing:
            self._start_reading()

    def _read_ready(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            data = sock.recv(MAX_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._force_close(exc)
            return
        try:
            if data:
                self._protocol.data_received(data)
                return
            self._stop_reading()
            keep_open = self._protocol.eof_received()
        except Exception as exc:  # a bug in the protocol: this connection ends, as in asyncio
            logger.exception("%r: the protocol failed on received data", self)
            self._force_close(exc)
            return
        if not keep_open:
            self.close()

    # -- writing --------------------------------------------------------------------------------
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._conn_lost or self._sock is None or not data:
            return  # (asyncio drops writes to a lost connection too)
        buffer = self._buffer
        if buffer is None:
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._force_close(exc)
                return
            if sent == len(data):
                return
            self._buffer = bytearray(memoryview(data)[sent:])
            self._loop.add_writer(self._fd, self._write_ready)
        else:
            buffer += data
        self._maybe_pause_protocol()

    def _write_ready(self) -> None:
        buffer, sock = self._buffer, self._sock
        if buffer is None or sock is None:
            return
        try:
            sent = sock.send(buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._loop.remove_writer(self._fd)
            self._buffer = None
            self._force_close(exc)
            return
        if sent:
            del buffer[:sent]
        if buffer:
            self._maybe_resume_protocol()
            return
        self._buffer = None  # (an idle connection keeps no buffer)
        self._loop.remove_writer(self._fd)
        self._maybe_resume_protocol()
        if self._closing:
            self._connection_lost_soon(None)

    def get_write_buffer_size(self) -> int:
        return 0 if self._buffer is None else len(self._buffer)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._low_water, self._high_water

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if high is None:
            high = HIGH_WATER if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError(f"high ({high!r}) must be >= low ({low!r}) must be >= 0")
        self._high_water, self._low_water = high, low
        self._maybe_pause_protocol()

    def _maybe_pause_protocol(self) -> None:
        if self._protocol_paused or self.get_write_buffer_size() <= self._high_water:
            return
        self._protocol_paused = True
        try:
            self._protocol.pause_writing()
        except Exception:
            logger.exception("protocol.pause_writing() failed")

    def _maybe_resume_protocol(self) -> None:
        if self._protocol_paused and self.get_write_buffer_size() <= self._low_water:
            self._protocol_paused = False
            try:
                self._protocol.resume_writing()
            except Exception:
                logger.exception("protocol.resume_writing() failed")

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        raise NotImplementedError("SocketTransport does not half-close")

    # -- closing --------------------------------------------------------------------------------
    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Stop reading; once what is buffered is sent, close (`connection_lost(None)`)."""
        if self._closing:
            return
        self._closing = True
        self._stop_reading()
        if self._buffer is None:
            self._connection_lost_soon(None)

    def abort(self) -> None:
        self._force_close(None)

    def _force_close(self, exc: Exception | None) -> None:
        if self._conn_lost:
            return
        if self._buffer is not None:
            self._buffer = None
            self._loop.remove_writer(self._fd)
        self._closing = True
        self._stop_reading()
        self._connection_lost_soon(exc)

    def _connection_lost_soon(self, exc: Exception | None) -> None:
        if self._conn_lost:
            return
        self._conn_lost = True
        self._loop.call_soon(self._connection_lost, exc)

    def _connection_lost(self, exc: Exception | None) -> None:
        try:
            self._protocol.connection_lost(exc)
        finally:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            # The protocol holds its transport: the cycle is broken here, as asyncio does, so
            # that a closed connection is freed at once, not at the collector's next pass.
            self._protocol = _GONE

    # -- protocol -------------------------------------------------------------------------------
    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        assert isinstance(protocol, asyncio.Protocol)
        self._protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol


__all__ = ["HIGH_WATER", "LOW_WATER", "MAX_READ", "SocketTransport"]
