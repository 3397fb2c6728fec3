"""pytest fixtures for a real ZooKeeper: `pytest_plugins =
["coordinator.testing.zookeeper_plugin"]`.

`zookeeper_server` starts one server for the whole test session (the JVM start is the slow part)
from Debian's jars (`coordinator.zookeeper.server`); `zookeeper_connect` gives each test a
connect string with a chroot of its own, so tests sharing the server never see each other's
znodes. Requires pytest-asyncio for async tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from coordinator.zookeeper.server import ZooKeeperServer, running_zookeeper


@pytest.fixture(scope="session")
def zookeeper_server() -> Iterator[ZooKeeperServer]:
    """A standalone server on a free loopback port, session timeouts from 200 ms up (tick
    100 ms); without fsync, which only costs time in tests."""
    with running_zookeeper(tick_ms=100, force_sync=False) as server:
        yield server


@pytest.fixture
def zookeeper_connect(zookeeper_server: ZooKeeperServer) -> str:
    """`127.0.0.1:PORT/<fresh chroot>`."""
    return f"{zookeeper_server.connect}/test-{uuid.uuid4().hex[:12]}"
