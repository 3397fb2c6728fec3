"""Kafka's broker settings accepted as Kafka accepts them: every key of Kafka 4.4's broker is
taken (those this node does not act on announced once and shown by DescribeConfigs), only a key
Kafka does not know is refused, `--set` values are validated as one configuration, and
`--config` reads a `server.properties` file, such as a client library's test fixture's."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from coordinator.cli.properties_file import read_properties
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.node.config import ConfigError, parse_settings
from coordinator.node.kafka_settings import kafka_broker_settings
from coordinator.testing.server import WireClient, running_server
from rebalance.config import CoordinatorConfig

DESCRIBE_CONFIGS, TOPIC, BROKER, STATIC_BROKER_CONFIG = 32, 2, 4, 4

#: What the issue found refused: settings every broker's server.properties has.
EVERYDAY = [
    "log.retention.hours=1",
    "log.retention.ms=3600000",
    "log.segment.bytes=1048576",
    "message.max.bytes=2000000",
    "num.network.threads=3",
    "num.io.threads=8",
    "log.cleaner.enable=false",
    "compression.type=lz4",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.example.Login required;",
]

#: kafka-python's test fixture for Kafka 4.0 (its servers/4.0.0/resources/kafka.properties): the
#: same keys and values, in a template its fixture fills in with str.format.
KAFKA_PYTHON_FIXTURE = """\
# A KRaft combined-mode broker for tests.
process.roles=broker,controller
node.id={broker_id}
controller.quorum.bootstrap.servers={controller_bootstrap_host}:{controller_port}
listeners={transport}://{host}:{port},CONTROLLER://{host}:{controller_port}
inter.broker.listener.name={transport}

{sasl_config}

authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=true
advertised.listeners={transport}://{host}:{port},CONTROLLER://{host}:{controller_port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,\\
    SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs={tmp_dir}/kraft-combined-logs
num.partitions={partitions}
default.replication.factor={replicas}
replica.lag.time.max.ms=1000
replica.socket.timeout.ms=1000
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
log.cleaner.enable=false
offsets.commit.timeout.ms=500
offsets.topic.num.partitions=2
offsets.topic.replication.factor=1
group.min.session.timeout.ms=1000
group.initial.rebalance.delay.ms=0
"""


def test_the_table_is_kafka_4_4s_whole_broker_configuration() -> None:
    table = kafka_broker_settings()
    assert len(table) == 379
    assert {s.split("=")[0] for s in EVERYDAY[:-1]} <= set(table)
    retention = table["log.retention.hours"]
    assert (retention.kind.name, retention.default, retention.valid) == ("INT", "168", "")
    assert table["log.cleanup.policy"].valid == "[compact, delete]"


def test_settings_kafka_knows_are_accepted_as_checked() -> None:
    config = parse_settings(EVERYDAY)
    assert config.inert["log.retention.hours"] == "1"
    assert config.inert["log.cleaner.enable"] == "false"
    assert len(config.inert) == len(EVERYDAY)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("log.retention.hours=1 hour", "log.retention.hours: takes a whole number (got '1 hour')"),
        ("log.cleaner.enable=yes", "log.cleaner.enable: takes true or false (got 'yes')"),
        ("num.io.threads=0", "num.io.threads: must be at least 1 (got '0')"),
        ("log.cleanup.policy=shred", "log.cleanup.policy: must be one of compact, delete"),
        ("compression.gzip.level=12", "compression.gzip.level: must be in [1, 9] or -1"),
        ("message.max.bytes=3000000000", "message.max.bytes: must be in [-2147483648, 2147483647]"),
    ],
)  # fmt: skip
def test_a_bad_value_of_a_kafka_setting_names_the_key_once(setting: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings([setting])
    assert str(caught.value).startswith(f"bad value for {message}")
    assert str(caught.value).count(setting.split("=")[0]) == 1


def test_only_a_key_kafka_does_not_know_is_refused_with_the_closest_names() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(["log.retention.hour=1"])
    assert str(caught.value) == (
        "unknown setting 'log.retention.hour': Kafka 4.4.0's broker has no such setting; "
        "did you mean log.retention.hours or log.retention.ms?"
    )
    for unknown in ("no.such.setting=1", "listener.name.internal.no.such=1"):
        with pytest.raises(ConfigError, match=r"^unknown setting '.*': Kafka 4\.4\.0's"):
            parse_settings([unknown])


def test_set_values_are_validated_as_one_configuration_in_any_order() -> None:
    """Issue 31: the heartbeat interval below its default minimum, with its minimum lowered."""
    pair = [
        "group.consumer.heartbeat.interval.ms=1500",
        "group.consumer.min.heartbeat.interval.ms=500",
    ]
    for order in (pair, pair[::-1]):
        groups = GroupCoordinatorExtension()
        parse_settings(order, claims=[groups])
        assert groups.config.group_consumer_heartbeat_interval_ms == 1500
    with pytest.raises(ConfigError) as caught:
        parse_settings(pair[:1], claims=[GroupCoordinatorExtension()])
    assert str(caught.value) == (
        "bad value for group.consumer.heartbeat.interval.ms: must be greater than or equal to "
        "group.consumer.min.heartbeat.interval.ms (1500 vs 5000)"
    )
    with pytest.raises(ConfigError) as caught:  # the minimum given alone is the key at fault
        parse_settings(
            ["group.consumer.min.heartbeat.interval.ms=6000"], claims=[GroupCoordinatorExtension()]
        )
    assert str(caught.value).startswith(
        "bad value for group.consumer.min.heartbeat.interval.ms: must be less than or equal to "
        "group.consumer.heartbeat.interval.ms"
    )


async def test_a_config_given_to_the_group_coordinator_is_the_one_in_force() -> None:
    config = CoordinatorConfig.from_properties({"group.min.session.timeout.ms": "1000"})
    groups = GroupCoordinatorExtension(config)
    async with running_server(groups=groups):  # settles the (empty) --set values
        assert groups.config is config


async def test_accepted_settings_are_announced_once_and_described(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="coordinator.serve"):
        async with running_server(settings=EVERYDAY, topics=[("t", 1)]) as server:
            client = await WireClient.connect(server.host, server.port)
            described = await _describe(client, BROKER, "1", ["log.retention.hours"])
            topic = await _describe(client, TOPIC, "t", ["retention.ms"])
            await client.close()
    announced = [
        r.getMessage() for r in caplog.records if "no effect on this node" in r.getMessage()
    ]
    assert len(announced) == 1
    assert "log.retention.hours=1, log.retention.ms=3600000" in announced[0]
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config=[hidden]" in announced[0]
    entry = described["log.retention.hours"]
    assert (entry.value, entry.config_source, entry.read_only) == ("1", STATIC_BROKER_CONFIG, True)
    assert topic["retention.ms"].value == "3600000"  # a topic's default follows, as in Kafka


async def _describe(client: WireClient, kind: int, name: str, keys: list[str]) -> dict[str, Any]:
    response = await client.request(
        DESCRIBE_CONFIGS, 4,
        {"resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": keys}],
         "include_synonyms": False, "include_documentation": False},
    )  # fmt: skip
    return {c.name: c for c in response.results[0].configs}


def test_a_properties_file_is_read_as_java_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\n  num.partitions = 3\nlog.dirs: /var/kafka\n"
        "listeners PLAINTEXT://:9092\nsasl.jaas.config=a \\\n    b\\\\\n"
        "key\\=with\\:seps=v\\u00e9\nnum.partitions=4\nempty.value=\n"
    )
    assert read_properties(path) == {
        "log.dirs": "/var/kafka",
        "listeners": "PLAINTEXT://:9092",
        "sasl.jaas.config": "a b\\",
        "key=with:seps": "vé",
        "num.partitions": "4",
        "empty.value": "",
    }


@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")
async def test_a_client_librarys_fixture_properties_start_the_server_unchanged(
    tmp_path: Path,
) -> None:
    """kafka-python's KRaft fixture, filled in as its fixture fills it; then kafka-python's
    admin client sees the node and creates a topic with the file's partition count."""
    from serve_process import REBALANCE, STARTED, stop

    properties = tmp_path / "kafka.properties"
    properties.write_text(
        KAFKA_PYTHON_FIXTURE.format(
            broker_id=0, transport="PLAINTEXT", host="127.0.0.1", port=0, controller_port=1,
            controller_bootstrap_host="127.0.0.1", sasl_config="", tmp_dir=tmp_path,
            partitions=2, replicas=1,
        )
    )  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *REBALANCE, "serve", "--config", str(properties), stderr=asyncio.subprocess.PIPE
    )
    STARTED.append(process.pid)
    assert process.stderr is not None
    said = []
    while not (found := re.search(r"listener PLAINTEXT \(PLAINTEXT\) on 127\.0\.0\.1:(\d+)",
                                  line := (await process.stderr.readline()).decode())):  # fmt: skip
        assert line, "the server exited before listening: " + "".join(said)
        said.append(line)
    port = int(found[1])
    from kafka import KafkaAdminClient  # imported here: its import warns, see the mark

    admin = await asyncio.to_thread(KafkaAdminClient, bootstrap_servers=f"127.0.0.1:{port}")
    try:
        cluster = await asyncio.to_thread(admin.describe_cluster)
        topics = await asyncio.to_thread(admin.describe_topics, ["__consumer_offsets"])
    finally:
        await asyncio.to_thread(admin.close)
    rest = await stop(process)
    assert [b["port"] for b in cluster["brokers"]] == [port]
    assert len(topics[0]["partitions"]) == 2  # offsets.topic.num.partitions=2
    assert (tmp_path / "kraft-combined-logs" / "groups.sqlite").exists()  # log.dirs
    log = "".join(said) + rest
    assert "listener CONTROLLER is a KRaft controller's" in log
    assert log.count("no effect on this node") == 1
    assert "Traceback" not in log and " ERROR " not in log


async def test_the_table_is_what_the_pinned_kafka_broker_describes(kafka_broker: Any) -> None:
    """Apache Kafka itself (the tests' peer, the same release) lists its broker settings with
    their types; the table has every one of them, and besides only the settings Kafka defines
    as internal (which DescribeConfigs never shows)."""
    from coordinator.testing.peers.kafka_broker import KAFKA_VERSION, NODE_ID

    assert KAFKA_VERSION == "4.4.0"
    host, port = kafka_broker.bootstrap.rsplit(":", 1)
    client = await WireClient.connect(host, int(port))
    try:
        response = await client.request(
            DESCRIBE_CONFIGS, 4,
            {"resources": [{"resource_type": BROKER, "resource_name": str(NODE_ID),
                            "configuration_keys": None}],
             "include_synonyms": False, "include_documentation": False},
        )  # fmt: skip
    finally:
        await client.close()
    described = {c.name: c for c in response.results[0].configs}
    table = kafka_broker_settings()
    assert set(described) - set(table) == set()
    internal = {name for name, setting in table.items() if setting.internal}
    assert set(table) - set(described) == internal - set(described)
    # an internal setting is shown only where it was given (the test broker sets one)
    assert {described[name].config_source for name in internal & set(described)} <= {
        STATIC_BROKER_CONFIG
    }
    kinds = {name: table[name].kind for name in described}
    assert {name: int(c.config_type) for name, c in described.items()} == kinds
