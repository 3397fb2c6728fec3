"""One local SparkSession for the whole test session: starting the JVM is the slow part.

Also lets these tests import `reference_episodes`, which lives beside them: the suite imports
test modules with `--import-mode=importlib`, which does not put their directory on `sys.path`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from coordinator.analytics.session import build_session  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", app_name="rebalance-analytics-tests", shuffle_partitions=2)
    yield session
    session.stop()
