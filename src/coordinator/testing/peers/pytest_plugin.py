"""pytest fixtures for Apache Kafka's own broker, loaded through the package's `pytest11` entry
point (`-p no:coordinator.testing.peers.pytest_plugin` turns them off).

`kafka_broker` is one broker (`coordinator.testing.peers.kafka_broker`, `TEST_SETTINGS`) for the
whole test session: the JVM start is the slow part. `kafka_brokers.get(settings)` gives a broker
with other settings (over `TEST_SETTINGS`), started on first use and shared by every test that asks
for the same settings; all are stopped when the session ends. Tests that use either get the
marker `kafka_broker` (`-m "not kafka_broker"` leaves them out) and one xdist group, so under
`--dist loadgroup` a single worker runs them all and the session starts each broker once.
Tests share a broker: each uses group and topic names of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the launcher is imported when a test asks for a broker
    from coordinator.testing.peers.kafka_broker import KafkaBroker

FIXTURES = frozenset({"kafka_broker", "kafka_brokers"})
XDIST_GROUP = "kafka_broker"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kafka_broker: runs against Apache Kafka's broker (scripts/ensure-kafka)"
    )
    config.addinivalue_line("markers", "xdist_group(name): tests that one xdist worker runs")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.kafka_broker)
            item.add_marker(pytest.mark.xdist_group(XDIST_GROUP))


class KafkaBrokers:
    """Brokers by settings, started on first use, all stopped by `stop_all`."""

    def __init__(self) -> None:
        self._running: dict[frozenset[tuple[str, str]], KafkaBroker] = {}

    def get(self, settings: Mapping[str, object] = {}) -> KafkaBroker:
        from coordinator.testing.peers.kafka_broker import KafkaBroker, setting_text

        key = frozenset((k, setting_text(v)) for k, v in settings.items())
        if key not in self._running:
            self._running[key] = KafkaBroker.start(settings)
        return self._running[key]

    def stop_all(self) -> None:
        while self._running:
            self._running.popitem()[1].stop()


@pytest.fixture(scope="session")
def kafka_brokers() -> Iterator[KafkaBrokers]:
    """`kafka_brokers.get({"group.consumer.assignment.interval.ms": 1000})`."""
    brokers = KafkaBrokers()
    try:
        yield brokers
    finally:
        brokers.stop_all()


@pytest.fixture(scope="session")
def kafka_broker(kafka_brokers: KafkaBrokers) -> KafkaBroker:
    """Apache Kafka with `TEST_SETTINGS`, for the whole session."""
    return kafka_brokers.get()
