"""pytest fixtures for the peers: Apache Kafka's own broker, franz-go's kfake and a PostgreSQL
server, loaded
through the package's `pytest11` entry point (`-p no:coordinator.testing.peers.pytest_plugin`
turns them off).

`kafka_broker` is one broker (`coordinator.testing.peers.kafka_broker`, `TEST_SETTINGS`) for the
whole test session: the JVM start is the slow part. `kafka_brokers.get(settings)` gives a broker
with other settings (over `TEST_SETTINGS`), started on first use and shared by every test that asks
for the same settings; all are stopped when the session ends. Tests that use either get the
marker `kafka_broker` (`-m "not kafka_broker"` leaves them out) and one xdist group, so under
`--dist loadgroup` a single worker runs them all and the session starts each broker once.
Tests share a broker: each uses group and topic names of its own.

`kfake_broker` and `kfake_brokers.get(settings)` do the same for franz-go's kfake
(`coordinator.testing.peers.kfake`, `TEST_SETTINGS`), marker and xdist group `kfake_broker`.

`postgresql_server` is one PostgreSQL server (`coordinator.testing.peers.postgresql`) for the
session and `postgresql` its URL; `postgresql_database` is the URL of a database made for one
test (CREATE DATABASE, dropped after it with its connections), so tests share the server and
nothing else. Tests that use them get the marker `postgresql` and one xdist group: one worker,
one server.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import pytest

if TYPE_CHECKING:  # the launcher is imported when a test asks for a broker
    from coordinator.testing.peers.kafka_broker import KafkaBroker
    from coordinator.testing.peers.kfake import KfakeBroker
    from coordinator.testing.peers.postgresql import PostgreSQLServer


class Stoppable(Protocol):
    def stop(self) -> None: ...


B = TypeVar("B", bound=Stoppable)
FIXTURES = frozenset({"kafka_broker", "kafka_brokers"})
XDIST_GROUP = "kafka_broker"
KFAKE_FIXTURES = frozenset({"kfake_broker", "kfake_brokers"})
KFAKE_GROUP = "kfake_broker"
POSTGRESQL_FIXTURES = frozenset({"postgresql_server", "postgresql", "postgresql_database"})
POSTGRESQL_GROUP = "postgresql"
_databases = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kafka_broker: runs against Apache Kafka's broker (scripts/ensure-kafka)"
    )
    config.addinivalue_line(
        "markers", "kfake_broker: runs against franz-go's kfake (scripts/ensure-kfake)"
    )
    config.addinivalue_line(
        "markers", "postgresql: runs against a PostgreSQL server (scripts/ensure-postgresql)"
    )
    config.addinivalue_line("markers", "xdist_group(name): tests that one xdist worker runs")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if FIXTURES & used:
            item.add_marker(pytest.mark.kafka_broker)
            item.add_marker(pytest.mark.xdist_group(XDIST_GROUP))
        if KFAKE_FIXTURES & used:
            item.add_marker(pytest.mark.kfake_broker)
            item.add_marker(pytest.mark.xdist_group(KFAKE_GROUP))
        if POSTGRESQL_FIXTURES & used:
            item.add_marker(pytest.mark.postgresql)
            item.add_marker(pytest.mark.xdist_group(POSTGRESQL_GROUP))


class Brokers(Generic[B]):
    """Brokers by settings, started on first use (`start(settings)`), all stopped by
    `stop_all`."""

    def __init__(self, start: Callable[[Mapping[str, object]], B]) -> None:
        self._start = start
        self._running: dict[frozenset[tuple[str, str]], B] = {}

    def get(self, settings: Mapping[str, object] = {}) -> B:
        from coordinator.testing.peers.kafka_broker import setting_text

        key = frozenset((k, setting_text(v)) for k, v in settings.items())
        if key not in self._running:
            self._running[key] = self._start(settings)
        return self._running[key]

    def stop_all(self) -> None:
        while self._running:
            self._running.popitem()[1].stop()


KafkaBrokers = Brokers["KafkaBroker"]
KfakeBrokers = Brokers["KfakeBroker"]


@pytest.fixture(scope="session")
def kafka_brokers() -> Iterator[KafkaBrokers]:
    """`kafka_brokers.get({"group.consumer.assignment.interval.ms": 1000})`."""
    from coordinator.testing.peers.kafka_broker import KafkaBroker

    brokers = KafkaBrokers(KafkaBroker.start)
    try:
        yield brokers
    finally:
        brokers.stop_all()


@pytest.fixture(scope="session")
def kafka_broker(kafka_brokers: KafkaBrokers) -> KafkaBroker:
    """Apache Kafka with `TEST_SETTINGS`, for the whole session."""
    return kafka_brokers.get()


@pytest.fixture(scope="session")
def kfake_brokers() -> Iterator[KfakeBrokers]:
    """`kfake_brokers.get({"group.max.size": 3})`."""
    from coordinator.testing.peers.kfake import KfakeBroker

    brokers = KfakeBrokers(KfakeBroker.start)
    try:
        yield brokers
    finally:
        brokers.stop_all()


@pytest.fixture(scope="session")
def kfake_broker(kfake_brokers: KfakeBrokers) -> KfakeBroker:
    """franz-go's kfake with `TEST_SETTINGS`, for the whole session."""
    return kfake_brokers.get()


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[PostgreSQLServer]:
    """One PostgreSQL server for the session (`TEST_SETTINGS`: fsync on, small buffers)."""
    from coordinator.testing.peers.postgresql import PostgreSQLServer

    with PostgreSQLServer.start() as server:
        yield server


@pytest.fixture(scope="session")
def postgresql(postgresql_server: PostgreSQLServer) -> str:
    """The session server's URL (its `postgres` database): for what spans databases."""
    return postgresql_server.url()


@pytest.fixture
def postgresql_database(postgresql_server: PostgreSQLServer) -> Iterator[str]:
    """The URL of a database of this test's own on the session's server."""
    import psycopg

    name = f"test_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(postgresql_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgresql_server.url(name)
    finally:
        with psycopg.connect(postgresql_server.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
