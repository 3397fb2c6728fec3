"""aiokafka, kafka-python and confluent-kafka (librdkafka), unmodified, over an SSL listener
with `ssl.client.auth=required`: each joins a group with its client certificate, reads every
record, commits and reads the commit back; each one's admin client lists the topics; each is
refused with a certificate from a CA the
server does not trust. One server (PLAINTEXT and SSL listeners) for the module; certificates
made by the suite (`coordinator.testing.certificates`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from clients import LIBRARIES, Security, admin_topics, consume_and_commit, refused, seed

from coordinator.testing.certificates import KEY_PASSWORD, Pki, make_pki
from coordinator.testing.server import RunningServer, server_in_thread

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

TOPIC = "secure"
PARTITIONS = 3
PER_PARTITION = 3
CANNOT_CONNECT = {
    "aiokafka": "Unable to bootstrap",
    "kafka-python": "Unable to bootstrap",
    "confluent": "_ALL_BROKERS_DOWN",
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def node(pki: Pki) -> Iterator[RunningServer]:
    settings = [
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        f"ssl.keystore.location={pki.server_keystore_encrypted}",
        f"ssl.key.password={KEY_PASSWORD}",
        f"ssl.truststore.location={pki.ca}",
        "ssl.client.auth=required",
        "group.initial.rebalance.delay.ms=0",
    ]
    with server_in_thread(topics=[(TOPIC, PARTITIONS)], settings=settings) as server:
        seed(server.bootstrap_of("PLAINTEXT"), TOPIC, PARTITIONS, PER_PARTITION)
        yield server


@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_consumer_with_a_trusted_certificate_forms_a_group_and_commits(
    node: RunningServer, pki: Pki, lib: str
) -> None:
    security = Security("SSL", pki.ca, pki.client_cert, pki.client_key)
    read, committed = consume_and_commit(
        lib, node.bootstrap_of("SSL"), security,
        topic=TOPIC, group=f"tls-{lib}", count=PARTITIONS * PER_PARTITION,
    )  # fmt: skip
    assert read == PARTITIONS * PER_PARTITION
    assert committed == {p: PER_PARTITION for p in range(PARTITIONS)}


@pytest.mark.parametrize("lib", LIBRARIES)
def test_an_untrusted_client_certificate_is_refused(
    node: RunningServer, pki: Pki, lib: str
) -> None:
    security = Security("SSL", pki.ca, pki.rogue_cert, pki.rogue_key)
    error = refused(lib, node.bootstrap_of("SSL"), security)
    # The handshake fails, so each library only sees a broker it cannot reach.
    assert error is not None and CANNOT_CONNECT[lib] in error
    trusted = Security("SSL", pki.ca, pki.client_cert, pki.client_key)
    assert refused(lib, node.bootstrap_of("SSL"), trusted) is None


@pytest.mark.parametrize("lib", LIBRARIES)
def test_an_admin_client_with_a_trusted_certificate_lists_topics(
    node: RunningServer, pki: Pki, lib: str
) -> None:
    security = Security("SSL", pki.ca, pki.client_cert, pki.client_key)
    assert TOPIC in admin_topics(lib, node.bootstrap_of("SSL"), security)
