"""Assembling a node: extensions (how the group coordinator plugs in) and start-up topics."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.groups.apis.common import group_runtime
from coordinator.node.app import ServerApp
from coordinator.node.config import parse_settings
from coordinator.node.contract import ApiSpec, Broker, RequestContext, ResponseValue
from coordinator.testing.server import WireClient, running_server

HEARTBEAT = 12


class CountingRuntime:
    """An extension's own state, reached by the handlers it registers."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.heartbeats = 0
        self.closed = False

    async def heartbeat(self, request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
        self.heartbeats += 1
        return {"error_code": ErrorCode.none}


async def test_extension_registers_apis_and_is_closed(tmp_path: Path) -> None:
    runtimes: list[CountingRuntime] = []

    @asynccontextmanager
    async def group_coordinator(broker: Broker) -> AsyncIterator[None]:
        runtime = CountingRuntime(broker.data_dir)
        runtimes.append(runtime)
        broker.registry.register(ApiSpec(HEARTBEAT, range(0, 5), runtime.heartbeat))
        yield
        runtime.closed = True

    async with running_server(
        data_dir=tmp_path, extensions=[group_coordinator], groups=False
    ) as node:
        client = await WireClient.connect(node.host, node.port)
        versions = await client.request(18, 3, {})
        assert HEARTBEAT in {k.api_key for k in versions.api_keys}
        beat = {"group_id": "g", "generation_id": 1, "member_id": "m"}
        response = await client.request(HEARTBEAT, 4, beat)
        assert response.error_code is ErrorCode.none
        await client.close()
    (runtime,) = runtimes
    assert (runtime.heartbeats, runtime.closed, runtime.data_dir) == (1, True, tmp_path)


async def test_missing_group_runtime_is_a_clear_error() -> None:
    async with running_server(groups=False) as node:
        with pytest.raises(LookupError, match="group coordinator is not running"):
            group_runtime(node.broker)


async def test_start_up_topics_keep_existing_partition_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = ServerApp(parse_settings([]), tmp_path, topics=[("orders", 3)])
    await first.start("127.0.0.1", 0)
    await first.stop()
    second = ServerApp(parse_settings([]), tmp_path, topics=[("orders", 5)])
    with caplog.at_level(logging.WARNING, logger="coordinator.serve"):
        await second.start("127.0.0.1", 0)
    assert second.broker is not None
    topic = second.broker.topics.get("orders")
    assert topic is not None and len(topic.partitions) == 3
    assert "already exists with 3 partitions" in caplog.text
    await second.stop()
