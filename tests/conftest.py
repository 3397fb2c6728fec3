"""What every test folder shares: a node and a client connected to it, the suite's Hypothesis
profile, and the xdist groups that keep each shared JVM in one worker.

* `node`: an in-process node on an ephemeral port for one test, with the topics and settings of
  the module's `pytest.mark.node(topics=[...], settings=[...])`; `client`: a `WireClient`
  connected to it. A module that needs another node defines a `node` fixture of its own.
* The suite runs in parallel (`scripts/test`: pytest-xdist, `--dist loadgroup`). A session
  fixture that starts a JVM (Spark, ZooKeeper, a Kafka broker) starts once per worker that asks
  for it, so every test that asks for one is put in that JVM's group: one worker runs them all,
  on one JVM. A new fixture of that kind is one line in `SHARED_JVMS`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from _pytest.nodeid import NodeId
from hypothesis import settings

from coordinator.testing.server import RunningServer, WireClient, running_server

#: Session fixtures that start a JVM, and the xdist group of the tests that use them.
SHARED_JVMS = {"spark": "spark", "zookeeper_server": "zookeeper"}

# A wall-clock deadline per example measures the machine (two cores shared by parallel workers),
# not the code: speed is measured in benchmarks/, never asserted in tests.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_itemcollected(item: pytest.Item) -> None:
    if item.get_closest_marker("xdist_group") is not None:
        return
    used = getattr(item, "fixturenames", ())
    group = next((g for fixture, g in SHARED_JVMS.items() if fixture in used), None)
    if group is None and item.get_closest_marker("spark") is not None:
        group = SHARED_JVMS["spark"]  # a Spark command in a process of its own
    if group is not None:
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)  # after every hook that adds groups (the peers plugin's too)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """What pytest-xdist 3.8's worker does for `--dist loadgroup`, for pytest 9: it appends
    "@GROUP" to the node ids of grouped tests, and its scheduler sends each group to one worker;
    but it writes `item._nodeid`, which pytest 9 no longer reads (the id is `item._id`)."""
    if not getattr(config.option, "loadgroup", False):  # set in xdist workers only
        return
    for item in items:
        marks = item.iter_markers("xdist_group")
        names = sorted({str(m.args[0] if m.args else m.kwargs["name"]) for m in marks})
        if names and "@" not in item.nodeid:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


@pytest.fixture
async def node(request: pytest.FixtureRequest) -> AsyncIterator[RunningServer]:
    marker = request.node.get_closest_marker("node")
    options = marker.kwargs if marker is not None else {}
    async with running_server(
        topics=options.get("topics", ()), settings=options.get("settings", ())
    ) as server:
        yield server


@pytest.fixture
async def client(node: RunningServer) -> AsyncIterator[WireClient]:
    connection = await WireClient.connect(node.host, node.port)
    yield connection
    await connection.close()
