"""A client-balance node's connections: one to the group's coordinator (found through the
bootstrap server) carries the group requests and the heartbeats, one per partition leader
carries the fetches, so a long-polling fetch never delays a heartbeat."""

from __future__ import annotations

import asyncio
from typing import Any

from coordinator.clients.client_balance.config import ClientBalanceConfig
from coordinator.clients.client_balance.errors import ClientBalanceError
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient

#: The FindCoordinator version sent.
FIND_COORDINATOR_VERSION = 3


class Connections:
    """The node's connections, each opened at first use."""

    def __init__(self, config: ClientBalanceConfig) -> None:
        self.config = config
        self._group: WireClient | None = None
        self._group_lock = asyncio.Lock()
        self._leaders: dict[tuple[str, int], tuple[WireClient, asyncio.Lock]] = {}

    async def group_request(self, api_key: int, values: dict[str, Any], *, version: int = 0) -> Any:
        """One request to the group's coordinator (one at a time), finding it first if needed."""
        async with self._group_lock:
            if self._group is None:
                self._group = await self._find_coordinator()
            return await self._group.request(api_key, version, values)

    async def _find_coordinator(self) -> WireClient:
        host, _, port = self.config.bootstrap.rpartition(":")
        bootstrap = await WireClient.connect(host, int(port), self.config.client_id)
        try:
            found = await bootstrap.request(
                ApiKey.FIND_COORDINATOR,
                FIND_COORDINATOR_VERSION,
                {"key": self.config.group_id, "key_type": 0},
            )
        except BaseException:
            await bootstrap.close()
            raise
        code = int(found.error_code)
        if code != 0:
            await bootstrap.close()
            raise ClientBalanceError(code, "finding the group's coordinator")
        if (found.host, int(found.port)) == (host, int(port)):
            return bootstrap
        await bootstrap.close()
        return await WireClient.connect(found.host, int(found.port), self.config.client_id)

    async def leader(self, address: tuple[str, int]) -> tuple[WireClient, asyncio.Lock]:
        """The connection to the partition leader at `address`, and the lock its requests take
        (one at a time on it)."""
        found = self._leaders.get(address)
        if found is None:
            connection = await WireClient.connect(*address, self.config.client_id)
            found = self._leaders[address] = (connection, asyncio.Lock())
        return found

    async def drop_group(self) -> None:
        """Close the coordinator's connection: the next group request finds it again."""
        async with self._group_lock:
            if self._group is not None:
                await self._group.close()
                self._group = None

    async def close(self) -> None:
        await self.drop_group()
        for client, _ in self._leaders.values():
            await client.close()
        self._leaders.clear()
