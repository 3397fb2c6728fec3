"""The asyncio Kafka-protocol server: frames in, kio requests to handlers, responses out in order.

Each socket is served by a `_Connection`, an `asyncio.Protocol`: `data_received` splits every
complete frame out of the bytes at hand and handles them one after another, with no task and no
`readexactly` per request. A request the API can answer at once (`answer_now`: heartbeats, most
of what a coordinator is asked) is answered synchronously. A request that must wait gets a
pending slot in the connection's in-order queue: a JoinGroup or SyncGroup parked until its round
completes (`answer_parked`) is that slot and nothing more, the slot being the callback the group
runtime answers through once the round's records are durable (an OffsetCommit waiting for its
fsync likewise); any other (a long-polling Fetch) also gets a task running its handler.
Responses are written strictly in request order: an answer ready while an earlier request is
still pending waits in the queue behind it. Kafka clients match responses to requests by order
as well as by correlation id, and a parked JoinGroup must not be overtaken by a later
Heartbeat's response.
Every response that became ready during one pass over the input (or, for parked requests and
tasks that finish, during one loop iteration) goes out with a single `transport.write`; the
connections answered during one loop iteration are written in one pass at its end.

Back-pressure, so that no client can make the server buffer without bound:
- at most `max_in_flight` requests of a connection may be pending; beyond that the connection
  stops reading (frames already received wait, unparsed, in its input buffer);
- when the transport's write buffer passes its high-water mark (a client that sends without
  reading), the transport pauses us (`pause_writing`) and the connection stops parsing and
  reading until the client has caught up (`resume_writing`).
A connection therefore holds at most one socket read of unparsed input, `max_in_flight` pending
requests, and about one high-water mark plus one write batch of unsent responses.

Bad input never affects other connections. The offending connection is closed with a warning on
the `coordinator.wire` logger for: a negative, too-small or oversized (`socket.request.max.bytes`)
frame length, a frame cut short by EOF, an unknown API key, an unsupported version of an API
other than ApiVersions (ApiVersions gets KIP-511's UNSUPPORTED_VERSION answer instead), and a
body kio cannot decode. A handler's storage failure (`OSError`, `StoreError`: disk full) is
logged in one line and answered KAFKA_STORAGE_ERROR where the response has a top-level error
code. Any other handler failure is logged with its traceback; the request is answered
with UNKNOWN_SERVER_ERROR if its response has a top-level error code (as Kafka does), otherwise
the connection is closed (clients reconnect and retry). When a connection closes, its in-flight
requests are cancelled.

Connection limits: connections are accepted by `coordinator.wire.transport.acceptor` within the
node's
`coordinator.wire.transport.connection_quotas` (`max.connections`, `max.connections.per.ip`); each
connection gives its place back when its socket closes.

Listeners: `start` may be called once per listening socket (`listeners`); each connection
carries a `Session` (`coordinator.wire.security.session`) naming its listener, with its TLS context
when the listener is SSL or SASL_SSL (asyncio does the TLS; this protocol sees plain bytes).

Shutdown (`close`): stop accepting, wake long polls, let in-flight requests finish within a grace
period, then close every connection.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import ssl
import time
import typing
from collections.abc import Mapping
from typing import Any, Final

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from coordinator.groups.store.base import StoreError
from coordinator.node.contract import ApiSpec, Broker, RequestContext, ResponseValue
from coordinator.wire.codec import (
    FRAME_LENGTH,
    FRAME_WRITERS,
    REQUEST_PREFIX,
    EncodedBody,
    FrameError,
    RequestPrefix,
    build_response,
    encode_response,
    encode_values,
    read_frame_length,
    read_request,
    response_class,
)
from coordinator.wire.security.sasl import refusal
from coordinator.wire.security.session import ServedListener, Session
from coordinator.wire.security.tls import tls_principal
from coordinator.wire.transport.acceptor import Acceptor, Ticket
from coordinator.wire.transport.connection_quotas import (
    UNLIMITED,
    ConnectionQuotas,
    parse_overrides,
)
from coordinator.wire.transport.listener import is_wildcard

logger = logging.getLogger("coordinator.wire")

DEFAULT_MAX_IN_FLIGHT: Final = 256
"""Requests one connection may have pending before its reads pause (back-pressure)."""

#: Bytes of answers collected in one pass over the input before they are written, so that the
#: transport's high-water mark, not the size of one read, bounds what a non-reading client makes
#: the server hold.
_WRITE_BATCH: Final = 1 << 16

#: Seconds closing connections get to send their last responses before their sockets are aborted.
_CLOSE_DRAIN: Final = 1.0


class _CloseConnection(Exception):
    """Raised while handling a frame to end its connection after logging why."""


class WireServer:
    """Serves one `Broker` on a TCP port."""

    def __init__(self, broker: Broker, *, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        self.broker = broker
        self.max_in_flight = max_in_flight
        config = broker.config
        self.quotas = ConnectionQuotas(
            config.max_connections,
            config.max_connections_per_ip,
            parse_overrides(config.max_connections_per_ip_overrides),
            config.max_connection_creation_rate,
        )
        self._acceptors: list[Acceptor] = []
        #: Every listener served, in the order started (the first is the node's main address).
        self.listeners: list[ServedListener] = []
        self._connections: set[_Connection] = set()
        self._next_connection_id = 0
        #: Connections with answers moved to their output since the last `_flush_answered`:
        #: written together once per loop iteration (a round's thousand SyncGroup answers, made
        #: durable by one fsync, go out in one pass).
        self._answered: list[_Connection] = []

    def __repr__(self) -> str:
        state = "listening" if self._acceptors else "stopped"
        address = f"{self.broker.host}:{self.broker.port}"
        return f"<WireServer {address} {state} connections={len(self._connections)}>"

    async def start(
        self, listener: socket.socket, served: ServedListener | None = None
    ) -> tuple[str, int]:
        """Serve on a bound, listening socket (see `coordinator.wire.transport.listener`); returns
        the bound address. Called once per listener. Without `served`: one PLAINTEXT listener
        whose advertised address the broker decides (`--bind`/`--advertise`); with it, the
        first listener's advertised address becomes the broker's main one."""
        bound_host, bound_port = listener.getsockname()[:2]
        if served is None:
            self.broker.replace_address(bound_host, bound_port)
            self._log_address(bound_host, bound_port)
            advertised = (self.broker.host, self.broker.port)
            served = ServedListener("PLAINTEXT", "PLAINTEXT", (bound_host, bound_port), advertised)
        else:
            if not self.listeners:
                self.broker.host, self.broker.port = served.advertised
            logger.info("listener %s (%s) on %s:%d, advertised as %s:%d", served.name,
                        served.protocol, bound_host, bound_port, *served.advertised)  # fmt: skip
        self.listeners.append(served)
        limits = self.broker.config.listener_limits.get(served.name.upper())
        own = None
        if limits:
            own = ConnectionQuotas(
                limits.get("max.connections", UNLIMITED),
                creation_rate=limits.get("max.connection.creation.rate", UNLIMITED),
            )
        acceptor = Acceptor(
            listener,
            served.tls,
            self.quotas,
            lambda ticket: self._new_connection(served, ticket),
            lambda ticket: self._released(ticket, own),
            own,
        )
        self._acceptors.append(acceptor)
        acceptor.resume()
        return bound_host, bound_port

    def _log_address(self, bound_host: str, bound_port: int) -> None:
        advertised = (self.broker.host, self.broker.port)
        if advertised == (bound_host, bound_port):
            logger.info("listening on %s:%d (node %d)", bound_host, bound_port, self.broker.node_id)
        else:
            reason = (
                " (the host name, since a wildcard address is not one clients can reach; "
                "choose with --advertise HOST:PORT)"
                if is_wildcard(bound_host) and not self.broker.config.advertised_host
                else ""
            )
            logger.info(
                "listening on %s:%d (node %d), advertised to clients as %s:%d%s",
                bound_host, bound_port, self.broker.node_id, *advertised, reason,
            )  # fmt: skip

    async def close(self, grace: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish (up to `grace` s), close connections."""
        for acceptor in self._acceptors:
            acceptor.close()
        self.broker.begin_closing()
        connections = list(self._connections)
        for conn in connections:
            conn.stop_reading()
        pending: list[asyncio.Future[Any]] = [
            task for conn in connections for task in conn.in_flight
        ]
        pending += [conn.parked_done() for conn in connections if conn.parked]
        if pending:
            _done, late = await asyncio.wait(pending, timeout=grace)
            if late:
                logger.warning("shutdown: cancelling %d requests still in flight", len(late))
        for conn in connections:
            conn.close()
        closed = [conn.wait_closed() for conn in connections if conn.transport is not None]
        if closed:
            await asyncio.wait(closed, timeout=_CLOSE_DRAIN)
        for conn in connections:
            conn.abort()  # a client that never read its last responses
        self._acceptors.clear()

    def _new_connection(self, listener: ServedListener, ticket: Ticket) -> _Connection:
        self._next_connection_id += 1
        return _Connection(self, self._next_connection_id, listener, ticket)

    def _released(self, ticket: Ticket, listener_quotas: ConnectionQuotas | None) -> None:
        was_full = self.quotas.full or (listener_quotas is not None and listener_quotas.full)
        self.quotas.release(ticket.address)
        if listener_quotas is not None:
            listener_quotas.release(ticket.address)
        if was_full:  # an acceptor paused on a limit this connection held a place in
            for acceptor in self._acceptors:
                acceptor.resume()

    def _schedule_flush(self, conn: _Connection) -> None:
        if not self._answered:
            asyncio.get_running_loop().call_soon(self._flush_answered)
        self._answered.append(conn)

    def _flush_answered(self) -> None:
        answered, self._answered = self._answered, []
        for conn in answered:
            conn._flush_and_resume()

    def _opened(self, conn: _Connection) -> None:
        self._connections.add(conn)

    def _gone(self, conn: _Connection) -> None:
        self._connections.discard(conn)


class _Slot:
    """A request of one connection whose answer is not written yet: pending while its task
    runs, `done` with the bytes to write (None: write nothing) once answered."""

    __slots__ = ("data", "done")

    def __init__(self, data: bytes | None = None, done: bool = False) -> None:
        self.data = data
        self.done = done


class _ParkedSlot(_Slot):
    """A parked request (`ApiSpec.answer_parked`): the slot is itself the callback its API
    answers through, so waiting costs this object and nothing else (no task, no future)."""

    __slots__ = ("connection", "prefix")

    def __init__(self, connection: _Connection, prefix: RequestPrefix) -> None:
        self.data = None
        self.done = False
        self.connection = connection
        self.prefix = prefix

    def __call__(self, value: ResponseValue) -> None:
        if self.done:
            return
        connection = self.connection
        if connection._closing:  # nobody to write to
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
                data = None if value is None else _encode(value, self.prefix)
        except Exception as exc:
            self.fail(exc)
            return
        self._settle(data)

    def fail(self, exc: Exception) -> None:
        """Starting or answering the request raised: answered as `_Connection._failed` says."""
        if self.done:
            return
        connection = self.connection
        data = connection._failed(self.prefix, exc)
        if data is None:
            connection.close()
        self._settle(data)

    def _settle(self, data: bytes | None) -> None:
        connection = self.connection
        connection.parked -= 1
        connection._complete(self, data)
        if not connection.parked and connection._parked_done is not None:
            connection._parked_settled()


class _Connection(asyncio.Protocol):
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
        self, server: WireServer, number: int, listener: ServedListener, ticket: Ticket
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
        self._queue: list[_Slot] | None = None
        #: How many of them are parked slots (`_ParkedSlot`), and what shutdown waits on
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
        return f"<_Connection {self.name} pending={pending} in_flight={tasks}>"

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
        self.server._opened(self)

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
        self.server._gone(self)
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
        except (_CloseConnection, FrameError) as reason:
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
        api_key, api_version, correlation_id = REQUEST_PREFIX.unpack_from(frame, 0)
        session = self.session
        if session is not None and session.gated:
            refused = refusal(session, api_key, time.monotonic())
            if refused is not None:
                raise _CloseConnection(refused)
        registry = self.server.broker.registry
        spec = registry.get(api_key)
        if spec is None:
            raise _CloseConnection(f"unknown api_key {api_key}")
        prefix = RequestPrefix(api_key, api_version, correlation_id)
        if api_version not in spec.versions:
            if spec.answer_unsupported_version is None:
                raise _CloseConnection(
                    f"unsupported version {api_version} of api_key {api_key} "
                    f"(advertised {spec.versions.start}-{spec.versions.stop - 1})"
                )
            response = spec.answer_unsupported_version(registry)
            self._answered(encode_response(response, correlation_id))
            return
        try:
            client_id, body = read_request(frame, prefix)
        except FrameError as exc:
            raise _CloseConnection(str(exc)) from None
        context = RequestContext(self.server.broker, correlation_id, client_id, self.peer, session)
        if spec.answer_now is not None:
            try:
                value = spec.answer_now(body, api_version, context)
            except Exception:
                value = None  # the asynchronous path answers, and logs, any failure
            if value is not None:
                self._answered(_encode(value, prefix))
                if session is not None and session.close_after_answer is not None:
                    # A failed authentication (logged by coordinator.wire.security.sasl).
                    self.stop_reading()
                    loop = asyncio.get_running_loop()
                    loop.call_later(session.close_after_answer, self.close)
                return
        if spec.answer_parked is not None:
            parked = _ParkedSlot(self, prefix)
            self._pending(parked)
            self.parked += 1
            try:
                spec.answer_parked(body, api_version, context, parked)
            except Exception as exc:
                parked.fail(exc)
            return
        slot = _Slot()
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
            self._queue.append(_Slot(data, True))
        else:
            self._output(data)

    def _output(self, data: bytes) -> None:
        if self._out is None:
            self._out = [data]
        else:
            self._out.append(data)
        self._out_bytes += len(data)

    def _pending(self, slot: _Slot) -> None:
        if self._queue is None:
            self._queue = [slot]
        else:
            self._queue.append(slot)

    async def _answer(
        self,
        slot: _Slot,
        spec: ApiSpec,
        prefix: RequestPrefix,
        request: object,
        context: RequestContext,
    ) -> None:
        try:
            value = await spec.handle(request, prefix.api_version, context)
            data = None if value is None else _encode(value, prefix)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            data = self._failed(prefix, exc)
            if data is None:
                self.close()
                return
        self._complete(slot, data)

    def _failed(self, prefix: RequestPrefix, exc: Exception) -> bytes | None:
        """Log a request's failure; the error answer to send, or None: close the connection.

        A storage failure (disk full, I/O error) the handler did not answer itself is one line,
        no traceback (a full disk fails every write), and Kafka's code for it; any other
        failure is logged with its traceback and answered UNKNOWN_SERVER_ERROR."""
        if isinstance(exc, OSError | StoreError):
            data = _storage_error(prefix)
            logger.warning(
                "%s: api_key %d v%d failed to store (correlation id %d): %s; %s",
                self.name,
                prefix.api_key,
                prefix.api_version,
                prefix.correlation_id,
                exc,
                "answering KAFKA_STORAGE_ERROR" if data else "closing connection",
            )
            return data
        data = _unknown_server_error(prefix)
        logger.error(
            "%s: handler for api_key %d v%d failed (correlation id %d); %s",
            self.name,
            prefix.api_key,
            prefix.api_version,
            prefix.correlation_id,
            "answering UNKNOWN_SERVER_ERROR" if data else "closing connection",
            exc_info=exc,
        )
        return data

    def _complete(self, slot: _Slot, data: bytes | None) -> None:
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
            self.server._schedule_flush(self)

    def _flush_and_resume(self) -> None:
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


def _encode(
    value: Mapping[str, Any] | ResponsePayload | EncodedBody, prefix: RequestPrefix
) -> bytes:
    if isinstance(value, dict):  # the usual answer: written straight from the dict
        return encode_values(prefix.api_key, prefix.api_version, value, prefix.correlation_id)
    if isinstance(value, EncodedBody):  # a reused answer (heartbeats), before the ABC check
        return encode_response(_check_response(value, prefix), prefix.correlation_id)
    response = (
        build_response(prefix.api_key, prefix.api_version, value)
        if isinstance(value, Mapping)
        else value
    )
    return encode_response(_check_response(response, prefix), prefix.correlation_id)


def _unknown_server_error(prefix: RequestPrefix) -> bytes | None:
    """An UNKNOWN_SERVER_ERROR answer, for APIs whose response has a top-level error code.

    Other responses carry errors only per topic/partition; an empty one would read as success,
    so for those the connection is closed instead.
    """
    return _error_answer(prefix, ErrorCode.unknown_server_error)


def _storage_error(prefix: RequestPrefix) -> bytes | None:
    """A KAFKA_STORAGE_ERROR answer, for APIs whose response has a top-level error code."""
    return _error_answer(prefix, ErrorCode.kafka_storage_error)


def _error_answer(prefix: RequestPrefix, code: ErrorCode) -> bytes | None:
    fields = {
        f.name for f in dataclasses.fields(response_class(prefix.api_key, prefix.api_version))
    }
    if "error_code" not in fields:
        return None
    return _encode({"error_code": code}, prefix)


def _check_response(
    response: ResponsePayload | EncodedBody, prefix: RequestPrefix
) -> ResponsePayload | EncodedBody:
    kind = response.response_type if isinstance(response, EncodedBody) else type(response)
    if kind.__api_key__ != prefix.api_key or kind.__version__ != prefix.api_version:
        raise TypeError(
            f"handler returned {kind.__qualname__} v{kind.__version__} for "
            f"api_key {prefix.api_key} v{prefix.api_version}"
        )
    return response
