"""pytest fixtures for a live server: enable with `pytest_plugins = ["coordinator.pytest_plugin"]`.

`kafka_server` is an in-process server (see `coordinator.testing.running_server`) with topics
taken from the `kafka_topics` fixture (override it in a test module to choose them); requires
pytest-asyncio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from coordinator.testing import RunningServer, running_server


@pytest.fixture
def kafka_topics() -> list[tuple[str, int]]:
    """Topics (name, partitions) the `kafka_server` fixture creates before it listens."""
    return [("test-topic", 3)]


@pytest_asyncio.fixture
async def kafka_server(kafka_topics: list[tuple[str, int]]) -> AsyncIterator[RunningServer]:
    async with running_server(topics=kafka_topics) as server:
        yield server
