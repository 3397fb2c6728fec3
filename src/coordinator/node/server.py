"""The asyncio Kafka-protocol server: frames in, kio requests to handlers, responses out in order.

Each socket is served by a `Connection` (`coordinator.node.connection`), an `asyncio.Protocol`:
`data_received` splits every complete frame out of the bytes at hand and handles them one after
another, with no task and no `readexactly` per request. A request the API can answer at once
(`answer_now`: heartbeats, most of what a coordinator is asked) is answered synchronously. A request
that must wait gets a pending slot in the connection's in-order queue: a JoinGroup or SyncGroup
parked until its round completes (`answer_parked`) is that slot and nothing more, the slot being the
callback the group runtime answers through once the round's records are durable (an OffsetCommit
waiting for its fsync likewise); any other (a long-polling Fetch) also gets a task running its
handler. Responses are written strictly in request order: an answer ready while an earlier request
is still pending waits in the queue behind it. Kafka clients match responses to requests by order as
well as by correlation id, and a parked JoinGroup must not be overtaken by a later Heartbeat's
response. Every response that became ready during one pass over the input (or, for parked requests
and tasks that finish, during one loop iteration) goes out with a single `transport.write`; the
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
import logging
import socket
from typing import Any, Final

from coordinator.node.connection import Connection
from coordinator.node.contract import Broker
from coordinator.wire.security.session import ServedListener
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

#: Seconds closing connections get to send their last responses before their sockets are aborted.
_CLOSE_DRAIN: Final = 1.0


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
        self._connections: set[Connection] = set()
        self._next_connection_id = 0
        #: Connections with answers moved to their output since the last `_flush_answered`:
        #: written together once per loop iteration (a round's thousand SyncGroup answers, made
        #: durable by one fsync, go out in one pass).
        self._answered: list[Connection] = []

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

    def _new_connection(self, listener: ServedListener, ticket: Ticket) -> Connection:
        self._next_connection_id += 1
        return Connection(self, self._next_connection_id, listener, ticket)

    def _released(self, ticket: Ticket, listener_quotas: ConnectionQuotas | None) -> None:
        was_full = self.quotas.full or (listener_quotas is not None and listener_quotas.full)
        self.quotas.release(ticket.address)
        if listener_quotas is not None:
            listener_quotas.release(ticket.address)
        if was_full:  # an acceptor paused on a limit this connection held a place in
            for acceptor in self._acceptors:
                acceptor.resume()

    def schedule_flush(self, conn: Connection) -> None:
        if not self._answered:
            asyncio.get_running_loop().call_soon(self._flush_answered)
        self._answered.append(conn)

    def _flush_answered(self) -> None:
        answered, self._answered = self._answered, []
        for conn in answered:
            conn.flush_and_resume()

    def opened(self, conn: Connection) -> None:
        self._connections.add(conn)

    def gone(self, conn: Connection) -> None:
        self._connections.discard(conn)
