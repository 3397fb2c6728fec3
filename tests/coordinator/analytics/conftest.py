"""One local SparkSession for the whole test session: starting the JVM is the slow part. The
cluster runs of `test_on_a_cluster.py` start with that session when they were collected, and their
tests run last (`cluster_runs.py` says why). In a parallel run every worker collects them but
only the one running the `spark` group (tests/conftest.py) starts that session and them.

Also lets these tests import `reference_episodes`, which lives beside them: the suite imports
test modules with `--import-mode=importlib`, which does not put their directory on `sys.path`.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

pyspark = pytest.importorskip("pyspark")

from cluster_runs import CLUSTER_RUNS, MODULE, start_cluster_runs  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from coordinator.analytics.session import build_session  # noqa: E402

#: Where the session's cluster runs write (removed when the session ends).
_CLUSTER_ROOT = pytest.StashKey[Path]()


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` have deselected what they do
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    on_cluster = [item for item in items if item.path.name == MODULE]
    items[:] = [item for item in items if item.path.name != MODULE] + on_cluster


def _start_cluster_runs(session: pytest.Session) -> None:
    """Start them when this session will run them: `-m`/`-k` may have deselected them."""
    config = session.config
    if CLUSTER_RUNS in config.stash or not any(i.path.name == MODULE for i in session.items):
        return
    root = config.stash[_CLUSTER_ROOT] = Path(tempfile.mkdtemp(prefix="on-a-cluster-"))
    config.stash[CLUSTER_RUNS] = start_cluster_runs(root)


def pytest_sessionfinish(session: pytest.Session) -> None:
    runs = session.config.stash.get(CLUSTER_RUNS, None)
    if runs is not None:
        runs.stop()
        shutil.rmtree(session.config.stash[_CLUSTER_ROOT], ignore_errors=True)


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    _start_cluster_runs(request.session)
    session = build_session("local[2]", app_name="rebalance-analytics-tests", shuffle_partitions=2)
    yield session
    session.stop()
