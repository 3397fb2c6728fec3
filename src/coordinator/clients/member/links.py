"""A member's two connections: to a bootstrap server (FindCoordinator and Metadata; the next
server in turn once one is lost) and to the group's coordinator (opened again when the member's
coordinator moves or the connection is lost)."""

from __future__ import annotations

from coordinator.clients.member.connection import Connection, ConnectionLost


class Links:
    """Each connection opened at first use, and again once it closed."""

    def __init__(self, servers: list[tuple[str, int]], client_id: str, timeout_s: float) -> None:
        self._servers = servers
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._bootstrap: Connection | None = None
        self._bootstrap_index = 0
        self._coordinator: Connection | None = None
        self._coordinator_address: tuple[str, int] | None = None

    async def bootstrap(self) -> Connection:
        if self._bootstrap is None or self._bootstrap.closed:
            host, port = self._servers[self._bootstrap_index % len(self._servers)]
            self._bootstrap_index += 1
            self._bootstrap = await Connection.open(host, port, self._client_id, self._timeout_s)
        return self._bootstrap

    async def coordinator(self, address: tuple[str, int] | None) -> Connection:
        """The connection to the coordinator at `address` (None: unknown, `ConnectionLost`)."""
        if address is None:
            raise ConnectionLost("coordinator unknown")
        if (
            self._coordinator is None
            or self._coordinator.closed
            or self._coordinator_address != address
        ):
            if self._coordinator is not None:
                self._coordinator.close()
            self._coordinator = await Connection.open(*address, self._client_id, self._timeout_s)
            self._coordinator_address = address
        return self._coordinator

    def close(self) -> None:
        """Close both at once (their requests fail with `ConnectionLost`)."""
        for connection in (self._bootstrap, self._coordinator):
            if connection is not None:
                connection.close()

    async def wait_closed(self) -> None:
        for connection in (self._bootstrap, self._coordinator):
            if connection is not None:
                await connection.wait_closed()
