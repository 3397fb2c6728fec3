"""A client-balance node's connections: the group's coordinator found through the bootstrap
server at the first group request and found again after it is dropped; one connection per
leader address, reused."""

from __future__ import annotations

from coordinator.clients.client_balance.config import ClientBalanceConfig
from coordinator.clients.client_balance.connections import Connections
from coordinator.testing.server import RunningServer
from coordinator.wire.api_keys import ApiKey


async def test_the_coordinator_is_found_at_first_use_and_again_once_dropped(
    node: RunningServer,
) -> None:
    connections = Connections(ClientBalanceConfig(node.bootstrap, "g"))
    try:
        for _ in range(2):
            answer = await connections.group_request(ApiKey.API_VERSIONS, {})
            assert int(answer.error_code) == 0
            await connections.drop_group()
    finally:
        await connections.close()


async def test_one_connection_per_leader_address(node: RunningServer) -> None:
    connections = Connections(ClientBalanceConfig(node.bootstrap, "g"))
    try:
        first = await connections.leader((node.host, node.port))
        assert await connections.leader((node.host, node.port)) is first
    finally:
        await connections.close()
