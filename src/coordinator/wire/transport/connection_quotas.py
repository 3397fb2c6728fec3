"""How many connections the node holds, in all and per client address (Kafka's `max.connections`,
`max.connections.per.ip`, `max.connections.per.ip.overrides`), and how fast it takes new ones
(`max.connection.creation.rate`).

A connection is counted from the moment it is accepted (before its TLS handshake, as Kafka
counts it) until its socket closes. The acceptor asks `admit` for each accepted socket: over its
address's limit the socket is closed at once (Kafka's TooManyConnectionsException); the
node-wide limit is not checked here but by the acceptor, which stops accepting while `full`, so
that new clients wait in the listen backlog until a slot frees, as Kafka's acceptor waits.
"""

from __future__ import annotations

import ipaddress
import socket
from collections import Counter
from typing import Final

UNLIMITED: Final = 2**31 - 1
"""Kafka's default for both limits (Int.MaxValue)."""


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,ip:count,...` → {address: count}; host names resolved once, now.
    `ValueError` naming the entry for anything else."""
    overrides: dict[str, int] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        host, colon, count = entry.rpartition(":")
        if not colon or not host or not count.isdigit():
            raise ValueError(
                f"max.connections.per.ip.overrides: {entry!r} is not HOST:COUNT (e.g. 10.0.0.5:200)"
            )
        overrides[_address_of(host.strip("[]"))] = int(count)
    return overrides


def _address_of(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return str(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0])
    except socket.gaierror as exc:
        raise ValueError(
            f"max.connections.per.ip.overrides: cannot resolve {host!r}: {exc.strerror}"
        ) from None


class ConnectionQuotas:
    """Counts of open connections, in all and per address."""

    def __init__(
        self,
        max_connections: int = UNLIMITED,
        max_per_ip: int = UNLIMITED,
        overrides: dict[str, int] | None = None,
        creation_rate: int = UNLIMITED,
    ) -> None:
        self.max_connections = max_connections
        self.creation_rate = creation_rate
        self._tokens = float(creation_rate)
        self._tokens_at: float | None = None
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self.total = 0
        self._per_ip: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"<ConnectionQuotas {self.total}/{self.max_connections}>"

    @property
    def full(self) -> bool:
        """The node-wide limit is reached: accept nothing until a connection closes."""
        return self.total >= self.max_connections

    def accept_delay(self, now: float) -> float:
        """Seconds to wait before accepting, to keep within `max.connection.creation.rate`
        (`now`: a monotonic clock)."""
        if self.creation_rate >= UNLIMITED:
            return 0.0
        self._refill(now)
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.creation_rate

    def _refill(self, now: float) -> None:
        if self._tokens_at is not None:
            elapsed = max(0.0, now - self._tokens_at)
            self._tokens = min(
                float(self.creation_rate), self._tokens + elapsed * self.creation_rate
            )
        self._tokens_at = now

    def limit_of(self, address: str) -> int:
        return self.overrides.get(address, self.max_per_ip)

    def admit(self, address: str, now: float = 0.0) -> str | None:
        """Count a new connection from `address` (accepted at monotonic time `now`); None if
        admitted, else why not (it is not counted then, but it used up its share of the
        creation rate, as an accepted socket does in Kafka)."""
        if self.creation_rate < UNLIMITED:
            self._refill(now)
            self._tokens -= 1
        limit = self.limit_of(address)
        if self._per_ip[address] >= limit:
            return f"{address} already has {self._per_ip[address]} connections (limit {limit})"
        self._per_ip[address] += 1
        self.total += 1
        return None

    def release(self, address: str) -> None:
        """An admitted connection closed."""
        self.total -= 1
        self._per_ip[address] -= 1
        if self._per_ip[address] <= 0:
            del self._per_ip[address]

    def count(self, address: str) -> int:
        return self._per_ip[address]
