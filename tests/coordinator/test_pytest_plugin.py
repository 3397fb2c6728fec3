"""The shipped pytest plugin: `kafka_server` runs a node with the `kafka_topics` topics."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.testing import RunningServer, WireClient

pytest_plugins = ["coordinator.pytest_plugin"]


async def test_kafka_server_fixture_serves_default_topic(kafka_server: RunningServer) -> None:
    client = await WireClient.connect(kafka_server.host, kafka_server.port)
    response = await client.request(3, 13, {"topics": None})
    assert [(t.name, len(t.partitions)) for t in response.topics] == [("test-topic", 3)]
    assert response.error_code is ErrorCode.none
    assert kafka_server.bootstrap == f"127.0.0.1:{kafka_server.port}"
    await client.close()
