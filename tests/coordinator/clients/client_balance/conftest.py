"""A node with topic t of 6 partitions holding 5 records each ("<partition>-<i>"), for the
client-balance client's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from coordinator.testing.server import RunningServer, WireClient, record_batch, running_server
from coordinator.wire.api_keys import ApiKey

SETTINGS = ("group.min.session.timeout.ms=100",)


@pytest.fixture
async def node() -> AsyncIterator[RunningServer]:
    async with running_server(topics=[("t", 6)], settings=SETTINGS) as server:
        client = await WireClient.connect(server.host, server.port)
        for partition in range(6):
            values = [f"{partition}-{i}".encode() for i in range(5)]
            await client.request(
                ApiKey.PRODUCE,
                9,
                {
                    "acks": -1,
                    "timeout": 1000,
                    "topic_data": [
                        {
                            "name": "t",
                            "partition_data": [
                                {"index": partition, "records": record_batch(values)}
                            ],
                        }
                    ],
                },
            )
        await client.close()
        yield server
