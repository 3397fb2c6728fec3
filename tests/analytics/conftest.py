"""One local SparkSession for the whole test session: starting the JVM is the slow part."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from coordinator.analytics.session import build_session  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", app_name="rebalance-analytics-tests", shuffle_partitions=2)
    yield session
    session.stop()
