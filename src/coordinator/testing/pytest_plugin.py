"""pytest fixtures for a live server, loaded through the `pytest11` entry point of the installed
package: no `pytest_plugins` line is needed (`-p no:coordinator.testing.pytest_plugin` turns them
off; a `pytest_plugins = ["coordinator.testing.pytest_plugin"]` line left from before is harmless).

`kafka_server` is a node (group coordinator, partition log, event log; see
`coordinator.testing.server.server_in_thread`) on an ephemeral loopback port for one test,
configured
by the test's `kafka` marker::

    @pytest.mark.kafka(topics=["orders:3", "audit"], settings={"group.max.size": 10})
    def test_something(kafka_server): ...

`topics` are `"name:partitions"`, a bare `"name"` (the broker's `num.partitions`, 1 unless set)
or (name, partitions) pairs (default: `["test-topic:3"]`); `settings` are broker settings with
Kafka's names, as a dict (or `KEY=VALUE` strings, as `server_in_thread` takes them too), over
the fixture's defaults (`coordinator.testing.server.TEST_DEFAULTS`), which differ from Kafka's in
one place: `group.initial.rebalance.delay.ms` is 0, so a group forms without Kafka's 3 s wait.
`kafka_server_factory(topics=..., settings=...)` starts more nodes (all stopped after the test).

The node runs on an event loop of its own in a background thread, so the same fixture serves
synchronous tests (kafka-python, confluent-kafka) and async tests under pytest-asyncio in strict
mode (mark them `@pytest.mark.asyncio`) or auto mode, whatever their loop scope; pytest-asyncio
is not needed for the fixture itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the server is imported when a test asks for one, not in every pytest run
    from coordinator.testing.server import RunningServer, Settings, Topics

DEFAULT_TOPICS: Sequence[str] = ("test-topic:3",)

ServerFactory = Callable[..., "RunningServer"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka(topics=['name:partitions' or 'name'], settings={kafka.setting: value}): topics "
        "and broker settings of the kafka_server fixture",
    )


@pytest.fixture
def kafka_server_factory() -> Iterator[ServerFactory]:
    """Start nodes: `kafka_server_factory(topics=..., settings=..., data_dir=None)`."""
    from coordinator.testing.server import server_in_thread, setting_lines, topic_specs

    with ExitStack() as running:

        def start(
            *,
            topics: Topics = DEFAULT_TOPICS,
            settings: Settings = (),
            data_dir: Path | None = None,
        ) -> RunningServer:
            try:
                topic_specs(topics)
                setting_lines(settings)
            except (ValueError, TypeError) as exc:
                raise pytest.UsageError(f"kafka_server: {exc}") from None
            return running.enter_context(
                server_in_thread(topics=topics, settings=settings, data_dir=data_dir)
            )

        yield start


@pytest.fixture
def kafka_server(
    request: pytest.FixtureRequest, kafka_server_factory: ServerFactory
) -> RunningServer:
    """A node for this test, configured by its `kafka` marker (see the module's docstring)."""
    marker = request.node.get_closest_marker("kafka")
    if marker is None:
        return kafka_server_factory()
    if marker.args:
        raise pytest.UsageError("@pytest.mark.kafka takes keywords: topics=..., settings=...")
    return kafka_server_factory(**marker.kwargs)
