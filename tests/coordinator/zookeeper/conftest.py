"""A real ZooKeeper for these tests (one server per session, a chroot per test), an admin
session to look at what the code under test wrote, and the directory of helper scripts."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from coordinator.testing.zookeeper_plugin import zookeeper_connect, zookeeper_server
from coordinator.zookeeper.client import ZooKeeper

__all__ = ["zk", "zookeeper_connect", "zookeeper_server"]

sys.path.insert(0, str(Path(__file__).parent))  # helper modules beside the tests


@pytest_asyncio.fixture
async def zk(zookeeper_connect: str) -> AsyncIterator[ZooKeeper]:
    """An admin session in the test's chroot."""
    session = ZooKeeper(zookeeper_connect, session_timeout_ms=10_000)
    await session.start()
    try:
        yield session
    finally:
        await session.close()
