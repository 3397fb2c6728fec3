"""The asyncio Kafka-protocol server: frames in, kio requests to handlers, responses out in order.

One `_Connection` per socket runs a read loop. Every well-formed request gets a sequence number
and is answered by its own task, so a slow request (a parked JoinGroup, a long-polling Fetch)
does not stop later ones from being processed. Responses, however, are written strictly in
request order: a finished response waits in a per-connection buffer until all earlier ones are
written. Kafka clients match responses to requests by order as well as by correlation id, and a
parked JoinGroup must not be overtaken by a later Heartbeat's response.

Bad input never affects other connections. The offending connection is closed with a warning on
the `coordinator.wire` logger for: a negative, too-small or oversized (`socket.request.max.bytes`)
frame length, a frame cut short by EOF, an unknown API key, an unsupported version of an API
other than ApiVersions (ApiVersions gets KIP-511's UNSUPPORTED_VERSION answer instead), and a
body kio cannot decode. A handler failure is logged with its traceback; the request is answered
with UNKNOWN_SERVER_ERROR if its response has a top-level error code (as Kafka does), otherwise
the connection is closed (clients reconnect and retry). When a connection closes, its in-flight
requests are cancelled.

Shutdown (`close`): stop accepting, wake long polls, let in-flight requests finish within a grace
period, then close every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import socket
from collections.abc import Mapping
from typing import Any, Final

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from coordinator.apis.contract import ApiSpec, Broker, RequestContext
from coordinator.wire.codec import (
    FRAME_LENGTH,
    EncodedBody,
    FrameError,
    RequestPrefix,
    build_response,
    decode_request,
    encode_response,
    read_frame_length,
    read_prefix,
    response_class,
)
from coordinator.wire.listener import is_wildcard

logger = logging.getLogger("coordinator.wire")

DEFAULT_MAX_IN_FLIGHT: Final = 256
"""Requests one connection may have outstanding before its reads pause (back-pressure)."""


class _CloseConnection(Exception):
    """Raised inside a connection to end it after logging why."""


class WireServer:
    """Serves one `Broker` on a TCP port."""

    def __init__(self, broker: Broker, *, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        self.broker = broker
        self.max_in_flight = max_in_flight
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._next_connection_id = 0

    def __repr__(self) -> str:
        state = "listening" if self._server is not None else "stopped"
        address = f"{self.broker.host}:{self.broker.port}"
        return f"<WireServer {address} {state} connections={len(self._connections)}>"

    async def start(self, listener: socket.socket) -> tuple[str, int]:
        """Serve on a bound, listening socket (see `coordinator.wire.listener`); returns the
        bound address. The broker is told the address to advertise."""
        self._server = await asyncio.start_server(self._accept, sock=listener)
        bound_host, bound_port = listener.getsockname()[:2]
        self.broker.replace_address(bound_host, bound_port)
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
        return bound_host, bound_port

    async def close(self, grace: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish (up to `grace` s), close connections."""
        if self._server is not None:
            self._server.close()
        self.broker.begin_closing()
        connections = list(self._connections)
        await asyncio.gather(*(conn.stop_reading() for conn in connections))
        pending = [task for conn in connections for task in conn.in_flight]
        if pending:
            _done, late = await asyncio.wait(pending, timeout=grace)
            if late:
                logger.warning("shutdown: cancelling %d requests still in flight", len(late))
        await asyncio.gather(*(conn.close() for conn in connections))
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._next_connection_id += 1
        conn = _Connection(self, reader, writer, self._next_connection_id)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)


class _Connection:
    """One client socket: read loop, concurrent dispatch, in-order response writer."""

    def __init__(
        self,
        server: WireServer,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        number: int,
    ) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.name = f"conn#{number} {self.peer}"
        self.in_flight: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(server.max_in_flight)
        self._next_sequence = 0
        self._next_to_write = 0
        self._finished: dict[int, bytes | None] = {}
        self._reading: asyncio.Task[None] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return (
            f"<_Connection {self.name} in_flight={len(self.in_flight)} "
            f"next_write={self._next_to_write}>"
        )

    async def run(self) -> None:
        self._reading = asyncio.current_task()
        try:
            await self._read_loop()
        except _CloseConnection as reason:
            logger.warning("%s: closing connection: %s", self.name, reason)
        except asyncio.CancelledError:
            pass
        except ConnectionError as exc:
            logger.info("%s: connection lost: %s", self.name, exc)
        finally:
            self._reading = None
            if not self.server.broker.closing:
                await self.close()

    async def stop_reading(self) -> None:
        task = self._reading
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in list(self.in_flight):
            task.cancel()
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()

    async def _read_loop(self) -> None:
        max_bytes = self.server.broker.config.socket_request_max_bytes
        while True:
            try:
                raw_length = await self.reader.readexactly(FRAME_LENGTH.size)
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    raise _CloseConnection("connection ended inside a frame length") from None
                return
            try:
                length = read_frame_length(raw_length, max_bytes)
            except FrameError as exc:
                raise _CloseConnection(str(exc)) from None
            try:
                frame = await self.reader.readexactly(length)
            except asyncio.IncompleteReadError as exc:
                raise _CloseConnection(
                    f"connection ended after {len(exc.partial)} of {length} frame bytes"
                ) from None
            await self._slots.acquire()
            try:
                self._dispatch(frame)
            except BaseException:
                self._slots.release()
                raise
            if self.writer.transport.get_write_buffer_size() > _WRITE_BACKLOG:
                # A client that sends without reading: stop reading until it catches up.
                with contextlib.suppress(ConnectionError):
                    await self.writer.drain()

    def _dispatch(self, frame: bytes) -> None:
        """Decode one frame and start the task answering it (or close the connection)."""
        try:
            prefix = read_prefix(frame)
        except FrameError as exc:
            raise _CloseConnection(str(exc)) from None
        registry = self.server.broker.registry
        spec = registry.get(prefix.api_key)
        if spec is None:
            raise _CloseConnection(f"unknown api_key {prefix.api_key}")
        sequence = self._next_sequence
        self._next_sequence += 1
        if prefix.api_version not in spec.versions:
            if spec.answer_unsupported_version is None:
                raise _CloseConnection(
                    f"unsupported version {prefix.api_version} of api_key {prefix.api_key} "
                    f"(advertised {spec.versions.start}-{spec.versions.stop - 1})"
                )
            response = spec.answer_unsupported_version(registry)
            self._complete(sequence, encode_response(response, prefix.correlation_id))
            return
        try:
            decoded = decode_request(frame, prefix)
        except FrameError as exc:
            raise _CloseConnection(str(exc)) from None
        context = RequestContext(
            self.server.broker, prefix.correlation_id, decoded.client_id, self.peer
        )
        if spec.answer_now is not None:
            try:
                value = spec.answer_now(decoded.body, prefix.api_version, context)
            except Exception:
                value = None  # the asynchronous path answers, and logs, any failure
            if value is not None:
                self._complete(sequence, _encode(value, prefix))
                return  # the read loop applies write back-pressure (see `_read_loop`)
        task = asyncio.create_task(self._answer(sequence, spec, prefix, decoded.body, context))
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)

    async def _answer(
        self,
        sequence: int,
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
        except Exception:
            data = _unknown_server_error(prefix)
            logger.exception(
                "%s: handler for api_key %d v%d failed (correlation id %d); %s",
                self.name,
                prefix.api_key,
                prefix.api_version,
                prefix.correlation_id,
                "answering UNKNOWN_SERVER_ERROR" if data else "closing connection",
            )
            if data is None:
                await self.close()
                return
        self._complete(sequence, data)
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    def _complete(self, sequence: int, data: bytes | None) -> None:
        """Record a finished response and write every response that is now next in order."""
        self._finished[sequence] = data
        while self._next_to_write in self._finished:
            ready = self._finished.pop(self._next_to_write)
            self._next_to_write += 1
            self._slots.release()
            if ready is not None and not self._closed:
                self.writer.write(ready)


#: Bytes of unsent responses above which a connection's read loop waits for the client.
_WRITE_BACKLOG = 1 << 20


def _encode(
    value: Mapping[str, Any] | ResponsePayload | EncodedBody, prefix: RequestPrefix
) -> bytes:
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
    fields = {
        f.name for f in dataclasses.fields(response_class(prefix.api_key, prefix.api_version))
    }
    if "error_code" not in fields:
        return None
    return _encode({"error_code": ErrorCode.unknown_server_error}, prefix)


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
