"""One client socket, served: frames parsed as they arrive, each answered through
`coordinator.node.dispatch` and `coordinator.node.answers`, the answers written strictly in
request order (the theory of operation is in `coordinator.node.server`).

One algorithm, so one module over 450 lines: the input framing, the in-order queue of pending
answers (slots, parked slots) and the back-pressure between them are one state machine.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import typing
from typing import Final, Protocol

from coordinator.node.answers import encode_answer, failure_answer
from coordinator.node.contract import ApiSpec, Broker, RequestContext, ResponseValue
from coordinator.node.dispatch import CloseConnection, read_frame
from coordinator.wire.codec import (
    FRAME_LENGTH,
    FRAME_WRITERS,
    REQUEST_PREFIX,
    FrameError,
    RequestPrefix,
    encode_values,
    read_frame_length,
)
from coordinator.wire.security.session import ServedListener, Session
from coordinator.wire.security.tls import tls_principal
from coordinator.wire.transport.acceptor import Ticket

logger = logging.getLogger("coordinator.wire")

#: Bytes of answers collected in one pass over the input before they are written, so that the
#: transport's high-water mark, not the size of one read, bounds what a non-reading client makes
#: the server hold.
_WRITE_BATCH: Final = 1 << 16


class ConnectionOwner(Protocol):
    """What a connection asks of the server that accepted it (`coordinator.node.server`)."""

    broker: Broker
    max_in_flight: int

    def opened(self, conn: Connection) -> None: ...

    def gone(self, conn: Connection) -> None: ...

    def schedule_flush(self, conn: Connection) -> None:
        """Write `conn`'s answers once, at the end of this loop iteration."""
        ...


class Slot:
    """A request of one connection whose answer is not written yet: pending while its task
    runs, `done` with the bytes to write (None: write nothing) once answered."""

    __slots__ = ("data", "done")

    def __init__(self, data: bytes | None = None, done: bool = False) -> None:
        self.data = data
        self.done = done


class ParkedSlot(Slot):
    """A parked request (`ApiSpec.answer_parked`): the slot is itself the callback its API
    answers through, so waiting costs this object and nothing else (no task, no future)."""

    __slots__ = ("connection", "prefix")

    def __init__(self, connection: Connection, prefix: RequestPrefix) -> None:
        self.data = None
        self.done = False
        self.connection = connection
        self.prefix = prefix

    def __call__(self, value: ResponseValue) -> None:
        if self.done:
            return
        connection = self.connection
        if connection.closing:  # nobody to write to
            self._settle(None)
            return
        data: bytes | None
        try:
            if value.__class__ is dict:  # the usual answer (`_encode`'s first case, inlined)
                prefix = self.prefix
                write = FRAME_WRITERS.get((prefix.api_key, prefix.api_version))
                if write is None:
                    data = encode_values(
                        prefix.api_key, prefix.api_version, value, prefix.correlation_id
                    )
                else:
                    data = write(value, prefix.correlation_id)
            else:
                data = None if value is None else encode_answer(value, self.prefix)
        except Exception as exc:
            self.fail(exc)
            return
        self._settle(data)

    def fail(self, exc: Exception) -> None:
        """Starting or answering the request raised: answered as `Connection.failure_answer`
        says."""
        if self.done:
            return
        connection = self.connection
        data = connection.failure_answer(self.prefix, exc)
        if data is None:
            connection.close()
        self._settle(data)

    def _settle(self, data: bytes | None) -> None:
        self.connection.parked_answered(self, data)


class Connection(asyncio.Protocol):
    """One client socket: frames parsed as they arrive, answered in order.

    It holds no task of its own: an idle connection is this object, its transport and an empty
    input buffer.
    """

    __slots__ = (
        "_buffer",
        "_closed",
        "_closing",
        "_flush_scheduled",
        "_lost",
        "_more",
        "_more_size",
        "_need",
        "_out",
        "_out_bytes",
        "_parked_done",
        "_queue",
        "_reading_paused",
        "_stopped",
        "_tasks",
        "_writing_paused",
        "listener",
        "number",
        "parked",
        "peer",
        "server",
        "session",
        "ticket",
        "transport",
    )

    def __init__(
        self, server: ConnectionOwner, number: int, listener: ServedListener, ticket: Ticket
    ) -> None:
        self.server = server
        self.ticket = ticket
        self.listener = listener
        self.session: Session | None = None
        self.number = number
        self.peer = ""
        self.transport: asyncio.Transport | None = None
        #: Tasks answering this connection's pending requests (None until there is one: an
        #: idle connection should cost little).
        self._tasks: dict[asyncio.Task[None], None] | None = None
        self._closed: asyncio.Future[None] | None = None
        self._lost = False
        #: Received bytes not yet handled, starting at a frame boundary...
        self._buffer = b""
        #: ...and the chunks received after them, joined only once the next frame is complete
        #: (`_need` bytes in all), so that a large request arriving in many reads is copied
        #: once, not once per read.
        self._more: list[bytes] | None = None
        self._more_size = 0
        self._need = 0
        #: Pending and answered-but-blocked requests, oldest first (a list, None while there
        #: is none: an idle connection keeps no list; it rarely holds more than a few).
        self._queue: list[Slot] | None = None
        #: How many of them are parked slots (`ParkedSlot`), and what shutdown waits on
        #: until none is.
        self.parked = 0
        self._parked_done: asyncio.Future[None] | None = None
        #: Answers ready to write (None while there is none).
        self._out: list[bytes] | None = None
        self._out_bytes = 0
        self._flush_scheduled = False
        self._reading_paused = False
        self._writing_paused = False
        self._stopped = False  # shutdown: take no further request
        self._closing = False

    def __repr__(self) -> str:
        pending, tasks = len(self._queue or ()), len(self.in_flight)
        return f"<Connection {self.name} pending={pending} in_flight={tasks}>"

    @property
    def name(self) -> str:
        """How the logs name this connection (made when logged, not kept)."""
        return f"conn#{self.number} {self.peer}" if self.peer else f"conn#{self.number}"

    @property
    def in_flight(self) -> list[asyncio.Task[None]]:
        """The tasks answering this connection's pending requests."""
        return [] if self._tasks is None else list(self._tasks)

    # -- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (asyncio's own, or an alternative loop's that does not subclass
        # `asyncio.Transport`, such as uvloop's).
        self.transport = typing.cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.session = self._new_session(transport, peer)
        self.server.opened(self)

    def _new_session(self, transport: asyncio.BaseTransport, peer: object) -> Session:
        tls = transport.get_extra_info("ssl_object")
        certificate = tls.getpeercert() if isinstance(tls, ssl.SSLObject) else None
        host = peer[0] if isinstance(peer, tuple) else str(peer)
        if host == self.ticket.address:
            host = self.ticket.address  # one string per connection for both, not two
        return Session(
            self.listener,
            host,
            tls_principal(certificate),
            authenticated=not self.listener.uses_sasl,
        )

    def data_received(self, data: bytes) -> None:
        if not self._buffer:
            self._buffer = data
        else:
            if self._more is None:
                self._more = [data]
            else:
                self._more.append(data)
            self._more_size += len(data)
            if len(self._buffer) + self._more_size < self._need:
                return  # the next frame is still incomplete
            self._join_input()
        self._process()

    def _join_input(self) -> None:
        if self._more:
            self._buffer = b"".join([self._buffer, *self._more])
            self._more = None
            self._more_size = 0

    def eof_received(self) -> bool:
        self._join_input()
        left = len(self._buffer)
        if left and not self._closing:
            if left < FRAME_LENGTH.size:
                self._fail("connection ended inside a frame length")
            else:
                (length,) = FRAME_LENGTH.unpack_from(self._buffer, 0)
                have = left - FRAME_LENGTH.size
                self._fail(f"connection ended after {have} of {length} frame bytes")
        else:
            self.close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and not self._closing:
            logger.info("%s: connection lost: %s", self.name, exc)
        self._closing = True
        self._cancel_in_flight()
        self._queue = None
        self._out = None
        self._buffer = b""
        self._more = None
        self._lost = True
        self._parked_settled()  # parked answers that come now are dropped
        self.server.gone(self)
        self.ticket.release()
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        """The client is not reading its responses: stop reading its requests."""
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._resume()

    # -- closing ----------------------------------------------------------------------------
    def stop_reading(self) -> None:
        """Shutdown: take no further request (pending ones may finish)."""
        self._stopped = True
        self._update_reading()

    def close(self) -> None:
        """Cancel pending requests, write what is answered, close once that is sent."""
        if self._closing:
            return
        self._closing = True
        self._cancel_in_flight()
        self._flush()
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and not self._lost:
            self.transport.abort()

    def wait_closed(self) -> asyncio.Future[None]:
        """Resolved once the socket is closed."""
        if self._closed is None:
            self._closed = asyncio.get_running_loop().create_future()
            if self._lost:
                self._closed.set_result(None)
        return self._closed

    def parked_done(self) -> asyncio.Future[None]:
        """Resolved once no parked request of this connection waits (or it is closed)."""
        if self._parked_done is None:
            self._parked_done = asyncio.get_running_loop().create_future()
            if not self.parked or self._lost:
                self._parked_done.set_result(None)
        return self._parked_done

    @property
    def closing(self) -> bool:
        """Closed or closing: an answer now has nobody to go to."""
        return self._closing

    def parked_answered(self, slot: Slot, data: bytes | None) -> None:
        """A parked request's answer (None: nothing to write) takes its place in the order."""
        self.parked -= 1
        self._complete(slot, data)
        if not self.parked and self._parked_done is not None:
            self._parked_settled()

    def _parked_settled(self) -> None:
        if self._parked_done is not None and not self._parked_done.done():
            self._parked_done.set_result(None)

    def _fail(self, reason: str) -> None:
        logger.warning("%s: closing connection: %s", self.name, reason)
        self.close()

    def _cancel_in_flight(self) -> None:
        current = asyncio.current_task()
        for task in self.in_flight:
            if task is not current:
                task.cancel()

    # -- input ------------------------------------------------------------------------------
    def _process(self) -> None:
        """Handle every complete frame in the buffer, as far as back-pressure allows."""
        buffer = self._buffer
        size = len(buffer)
        position = 0
        max_bytes = self.server.broker.config.socket_request_max_bytes
        max_in_flight = self.server.max_in_flight
        try:
            while (
                size - position >= FRAME_LENGTH.size
                and (self._queue is None or len(self._queue) < max_in_flight)
                and not (self._closing or self._stopped or self._writing_paused)
            ):
                (length,) = FRAME_LENGTH.unpack_from(buffer, position)
                if length < REQUEST_PREFIX.size or length > max_bytes:
                    read_frame_length(buffer[position : position + FRAME_LENGTH.size], max_bytes)
                end = position + FRAME_LENGTH.size + length
                if end > size:
                    break
                self._handle(buffer[position + FRAME_LENGTH.size : end])
                position = end
                if self._out_bytes >= _WRITE_BATCH:
                    self._flush()  # the transport may pause us here (`pause_writing`)
        except (CloseConnection, FrameError) as reason:
            self._fail(str(reason))
            return
        if self._closing:
            return
        rest = self._buffer = buffer[position:] if position else buffer
        if len(rest) < FRAME_LENGTH.size:
            self._need = FRAME_LENGTH.size
        else:
            self._need = FRAME_LENGTH.size + FRAME_LENGTH.unpack_from(rest, 0)[0]
        if self._out is not None:  # (a parked request has nothing to write yet)
            self._flush()
        self._update_reading()

    def _update_reading(self) -> None:
        transport = self.transport
        if transport is None or self._closing:
            return
        pause = (
            self._stopped
            or self._writing_paused
            or (self._queue is not None and len(self._queue) >= self.server.max_in_flight)
        )
        if pause and not self._reading_paused:
            self._reading_paused = True
            transport.pause_reading()
        elif not pause and self._reading_paused:
            self._reading_paused = False
            transport.resume_reading()

    def _resume(self) -> None:
        """Back-pressure eased: handle what is buffered, then read again."""
        if self._closing:
            return
        self._join_input()
        if self._buffer:
            self._process()
        else:
            self._update_reading()

    def _handle(self, frame: bytes) -> None:
        """Answer one frame now, or start the task answering it (or close the connection)."""
        session = self.session
        broker = self.server.broker
        read = read_frame(frame, broker.registry, session)
        if isinstance(read, bytes):
            self._answered(read)
            return
        spec, prefix, client_id, body = read
        api_version = prefix.api_version
        context = RequestContext(broker, prefix.correlation_id, client_id, self.peer, session)
        if spec.answer_now is not None:
            try:
                value = spec.answer_now(body, api_version, context)
            except Exception:
                value = None  # the asynchronous path answers, and logs, any failure
            if value is not None:
                self._answered(encode_answer(value, prefix))
                if session is not None and session.close_after_answer is not None:
                    # A failed authentication (logged by coordinator.wire.security.sasl).
                    self.stop_reading()
                    loop = asyncio.get_running_loop()
                    loop.call_later(session.close_after_answer, self.close)
                return
        if spec.answer_parked is not None:
            parked = ParkedSlot(self, prefix)
            self._pending(parked)
            self.parked += 1
            try:
                spec.answer_parked(body, api_version, context, parked)
            except Exception as exc:
                parked.fail(exc)
            return
        slot = Slot()
        self._pending(slot)
        task = asyncio.create_task(self._answer(slot, spec, prefix, body, context))
        if self._tasks is None:
            self._tasks = {}
        self._tasks[task] = None
        task.add_done_callback(self._task_done)

    # -- output -----------------------------------------------------------------------------
    def _task_done(self, task: asyncio.Task[None]) -> None:
        tasks = self._tasks
        if tasks is not None:
            tasks.pop(task, None)
            if not tasks:
                self._tasks = None

    def _answered(self, data: bytes) -> None:
        """A response ready now: out at once, unless an earlier request is still pending."""
        if self._queue:
            self._queue.append(Slot(data, True))
        else:
            self._output(data)

    def _output(self, data: bytes) -> None:
        if self._out is None:
            self._out = [data]
        else:
            self._out.append(data)
        self._out_bytes += len(data)

    def _pending(self, slot: Slot) -> None:
        if self._queue is None:
            self._queue = [slot]
        else:
            self._queue.append(slot)

    async def _answer(
        self,
        slot: Slot,
        spec: ApiSpec,
        prefix: RequestPrefix,
        request: object,
        context: RequestContext,
    ) -> None:
        try:
            value = await spec.handle(request, prefix.api_version, context)
            data = None if value is None else encode_answer(value, prefix)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            data = self.failure_answer(prefix, exc)
            if data is None:
                self.close()
                return
        self._complete(slot, data)

    def failure_answer(self, prefix: RequestPrefix, exc: Exception) -> bytes | None:
        """Log a request's failure; the error answer to send, or None: close the connection
        (`coordinator.node.answers.failure_answer`)."""
        return failure_answer(self.name, prefix, exc)

    def _complete(self, slot: Slot, data: bytes | None) -> None:
        """A pending request is answered: every answer now next in order moves to the output,
        written once at the end of this loop iteration."""
        slot.data, slot.done = data, True
        if self._closing:
            return
        queue = self._queue
        moved = False
        while queue and queue[0].done:
            ready = queue.pop(0).data
            moved = True
            if ready is not None:
                self._output(ready)
        if queue is not None and not queue:
            self._queue = None  # (an idle connection keeps no list)
        if moved and not self._flush_scheduled:
            self._flush_scheduled = True
            self.server.schedule_flush(self)

    def flush_and_resume(self) -> None:
        self._flush_scheduled = False
        if self._closing:
            return
        self._flush()
        if self._buffer or self._more or self._reading_paused:
            self._resume()  # (otherwise it would find nothing to do: a round's 2000 answers)

    def _flush(self) -> None:
        out = self._out
        transport = self.transport
        if not out or transport is None or transport.is_closing():
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        self._out = None
        self._out_bytes = 0
        transport.write(data)
