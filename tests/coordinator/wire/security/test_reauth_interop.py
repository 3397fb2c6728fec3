"""KIP-368 with the real client libraries: with `connections.max.reauth.ms`, SaslAuthenticate
tells each client its session lifetime. kafka-python and librdkafka re-authenticate on their
open connections before it ends; aiokafka does not read the lifetime, so the server closes its
connections when a request comes after their sessions ended, and it reconnects. Either way a
consumer that outlives several sessions keeps its group and commits. One test, the three
libraries at once (each in a thread), so that the sessions' lifetime is waited out once."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from clients import LIBRARIES, Security, consume_and_commit, seed

from coordinator.testing.server import RunningServer, server_in_thread
from coordinator.wire.security.credentials import CredentialStore

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

TOPIC = "reauth"
LIFETIME_MS = 2000


@pytest.fixture
def node(tmp_path: Path) -> Iterator[RunningServer]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = CredentialStore(data_dir)
    store.add("alice", "alice-secret")
    store.close()
    settings = [
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=SCRAM-SHA-512",
        f"connections.max.reauth.ms={LIFETIME_MS}",
        "group.initial.rebalance.delay.ms=0",
    ]
    with server_in_thread(topics=[(TOPIC, 1)], settings=settings, data_dir=data_dir) as server:
        seed(server.bootstrap_of("PLAINTEXT"), TOPIC, 1, 3)
        yield server


def test_consumers_outlive_their_sasl_sessions(node: RunningServer) -> None:
    security = Security(
        "SASL_PLAINTEXT", mechanism="SCRAM-SHA-512", username="alice", password="alice-secret"
    )
    bootstrap = node.bootstrap_of("SASL_PLAINTEXT")
    with ThreadPoolExecutor(len(LIBRARIES)) as pool:
        runs = {
            lib: pool.submit(
                consume_and_commit,
                lib,
                bootstrap,
                security,
                topic=TOPIC,
                group=f"reauth-{lib}",
                count=3,
                linger=2.2 * LIFETIME_MS / 1000,
            )
            for lib in LIBRARIES
        }
        results = {lib: run.result(timeout=60) for lib, run in runs.items()}
    assert results == dict.fromkeys(LIBRARIES, (3, {0: 3}))
    (sasl,) = [s.sasl for s in node.app.listeners if s.sasl is not None]
    # kafka-python's and librdkafka's connections (bootstrap, node, coordinator) each renewed
    # their session at least once.
    assert sasl.reauthentications >= 2
