"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs over a real connection at every
advertised version, and the settings that only matter on a cluster."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.node.config import ConfigError, parse_settings
from coordinator.testing.server import RunningServer, WireClient, running_server

API_VERSIONS, DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 18, 32, 33, 44
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

SETTINGS = [
    "num.partitions=2",
    "group.initial.rebalance.delay.ms=0",
    "offsets.topic.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "min.insync.replicas=1",
]


# the `node` and `client` fixtures (tests/conftest.py) start this node and connect to it
pytestmark = pytest.mark.node(topics=[("t1", 3)], settings=SETTINGS)


async def describe(
    client: WireClient,
    version: int,
    resource_type: int,
    name: str,
    keys: list[str] | None = None,
    *,
    synonyms: bool = False,
) -> Any:
    response = await client.request(
        DESCRIBE_CONFIGS,
        version,
        {"resources": [{"resource_type": resource_type, "resource_name": name,
                        "configuration_keys": keys}],
         "include_synonyms": synonyms, "include_documentation": False},
    )  # fmt: skip
    return response.results[0]


def by_name(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


async def test_api_versions_advertises_the_config_apis(client: WireClient) -> None:
    response = await client.request(API_VERSIONS, 3, {})
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[DESCRIBE_CONFIGS] == (1, 4)
    assert versions[ALTER_CONFIGS] == (0, 2)
    assert versions[INCREMENTAL_ALTER_CONFIGS] == (0, 1)


@pytest.mark.parametrize("version", range(1, 5))
async def test_describe_broker_configs_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    result = await describe(client, version, BROKER, str(node.broker.node_id), synonyms=True)
    assert result.error_code is ErrorCode.none
    configs = by_name(result)
    # Every setting the node runs with, by Kafka name: server, group coordinator, cluster-only.
    given = {
        "num.partitions": "2",
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    }
    for name, value in given.items():
        assert (configs[name].value, configs[name].config_source) == (value, STATIC_BROKER_CONFIG)
    defaults = {
        "auto.create.topics.enable": "true",
        "group.min.session.timeout.ms": "6000",
        "offsets.topic.num.partitions": "50",
        "offsets.commit.timeout.ms": "5000",
        "default.replication.factor": "1",
        "delete.topic.enable": "true",
    }
    for name, value in defaults.items():
        assert (configs[name].value, configs[name].config_source) == (value, DEFAULT_CONFIG)
    # The command line's address and data dir, under Kafka's names.
    assert configs["listeners"].value == f"PLAINTEXT://{node.host}:{node.port}"
    assert configs["advertised.listeners"].value == f"PLAINTEXT://{node.host}:{node.port}"
    assert configs["log.dirs"].value == str(node.data_dir)
    assert all(c.read_only for c in result.configs)
    # A password is sensitive and never shown, as in Kafka (its type PASSWORD from v3 on)
    assert [(c.name, c.value) for c in result.configs if c.is_sensitive] == [
        ("ssl.key.password", None)
    ]
    assert [s.name for s in configs["num.partitions"].synonyms] == ["num.partitions"]
    if version >= 3:
        assert configs["ssl.key.password"].config_type == 9  # PASSWORD
        assert configs["num.partitions"].config_type == 3  # INT
        assert configs["auto.create.topics.enable"].config_type == 1  # BOOLEAN
        assert configs["offsets.retention.check.interval.ms"].config_type == 5  # LONG


async def test_describe_broker_configs_by_key_and_for_other_brokers(
    node: RunningServer, client: WireClient
) -> None:
    node_id = str(node.broker.node_id)
    narrowed = await describe(client, 4, BROKER, node_id, ["num.partitions", "no.such"])
    assert [c.name for c in narrowed.configs] == ["num.partitions"]
    defaults = await describe(client, 4, BROKER, "")
    assert (defaults.error_code, defaults.configs) == (ErrorCode.none, ())
    other = await describe(client, 4, BROKER, str(node.broker.node_id + 1))
    assert other.error_code is ErrorCode.invalid_request
    loggers = await describe(client, 4, BROKER_LOGGER, node_id)
    assert loggers.error_code is ErrorCode.invalid_request


@pytest.mark.parametrize("version", range(1, 5))
async def test_describe_topic_configs_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    topic = node.broker.topics.get("t1")
    assert topic is not None
    node.broker.topics.set_configs(topic, {"retention.ms": "1000"})
    result = await describe(client, version, TOPIC, "t1", synonyms=True)
    configs = by_name(result)
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == (
        "1000",
        TOPIC_CONFIG,
    )
    assert [(s.name, s.source) for s in configs["retention.ms"].synonyms] == [
        ("retention.ms", TOPIC_CONFIG),
        ("log.retention.ms", DEFAULT_CONFIG),
    ]
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == (
        "delete",
        DEFAULT_CONFIG,
    )
    # A broker setting of the same meaning is the topic's default, as in Kafka.
    assert configs["min.insync.replicas"].config_source == STATIC_BROKER_CONFIG
    assert not any(c.read_only for c in result.configs)


async def test_describe_unknown_or_invalid_topics(client: WireClient) -> None:
    missing = await describe(client, 4, TOPIC, "missing")
    assert missing.error_code is ErrorCode.unknown_topic_or_partition
    invalid = await describe(client, 4, TOPIC, "bad/name")
    assert invalid.error_code is ErrorCode.invalid_topic_exception


async def alter(
    client: WireClient,
    version: int,
    resources: list[tuple[int, str, dict[str, str | None]]],
    *,
    validate_only: bool = False,
) -> list[ErrorCode]:
    response = await client.request(
        ALTER_CONFIGS,
        version,
        {"resources": [
            {"resource_type": t, "resource_name": n,
             "configs": [{"name": k, "value": v} for k, v in c.items()]}
            for t, n, c in resources], "validate_only": validate_only},
    )  # fmt: skip
    return [r.error_code for r in response.responses]


@pytest.mark.parametrize("version", range(0, 3))
async def test_alter_configs_replaces_the_overrides_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    topic = node.broker.topics.get("t1")
    assert topic is not None
    node.broker.topics.set_configs(topic, {"retention.ms": "1000"})
    codes = await alter(client, version, [(TOPIC, "t1", {"cleanup.policy": "compact"})])
    assert codes == [ErrorCode.none]
    assert topic.configs == {"cleanup.policy": "compact"}  # not incremental: retention.ms went


async def test_alter_configs_refusals_change_nothing(
    node: RunningServer, client: WireClient
) -> None:
    topic = node.broker.topics.get("t1")
    assert topic is not None
    codes = await alter(
        client,
        1,
        [
            (TOPIC, "t1", {"retention.ms": "10", "segment.bytes": "12"}),  # too small
            (TOPIC, "missing", {"retention.ms": "10"}),
            (BROKER, str(node.broker.node_id), {"num.partitions": "4"}),
        ],
    )
    assert codes == [
        ErrorCode.invalid_config,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_request,  # broker settings are read-only here
    ]
    assert topic.configs == {}
    checked = await alter(client, 2, [(TOPIC, "t1", {"retention.ms": "10"})], validate_only=True)
    assert checked == [ErrorCode.none]
    assert topic.configs == {}
    twice = await alter(client, 2, [(TOPIC, "t1", {}), (TOPIC, "t1", {})])
    assert twice == [ErrorCode.invalid_request] * 2


async def incremental(
    client: WireClient, version: int, name: str, *ops: tuple[str, int, str | None]
) -> tuple[ErrorCode, str | None]:
    response = await client.request(
        INCREMENTAL_ALTER_CONFIGS,
        version,
        {"resources": [{"resource_type": TOPIC, "resource_name": name, "configs": [
            {"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
         "validate_only": False},
    )  # fmt: skip
    (answer,) = response.responses
    return answer.error_code, answer.error_message


@pytest.mark.parametrize("version", range(0, 2))
async def test_incremental_alter_configs_at_every_version(
    node: RunningServer, client: WireClient, version: int
) -> None:
    topic = node.broker.topics.get("t1")
    assert topic is not None
    ok = (ErrorCode.none, None)
    assert await incremental(client, version, "t1", ("retention.ms", SET, "5000")) == ok
    assert await incremental(client, version, "t1", ("cleanup.policy", APPEND, "compact")) == ok
    assert topic.configs == {"retention.ms": "5000", "cleanup.policy": "delete,compact"}
    assert (
        await incremental(
            client,
            version,
            "t1",
            ("cleanup.policy", SUBTRACT, "delete"),
            ("retention.ms", DELETE, None),
        )
        == ok
    )
    assert topic.configs == {"cleanup.policy": "compact"}


async def test_incremental_alter_configs_refusals(node: RunningServer, client: WireClient) -> None:
    topic = node.broker.topics.get("t1")
    assert topic is not None
    cases = [
        (("retention.ms", APPEND, "5"), ErrorCode.invalid_config),  # not a list
        (("no.such.config", SET, "5"), ErrorCode.invalid_config),
        (("retention.ms", SET, "often"), ErrorCode.invalid_config),
        (("cleanup.policy", APPEND, "shred"), ErrorCode.invalid_config),
        (("retention.ms", 9, "5"), ErrorCode.invalid_request),
    ]
    for op, code in cases:
        answer, message = await incremental(client, 1, "t1", op)
        assert answer is code and message, op
    twice = await incremental(
        client, 1, "t1", ("retention.ms", SET, "1"), ("retention.ms", SET, "2")
    )
    assert twice[0] is ErrorCode.invalid_request
    assert (await incremental(client, 1, "missing", ("retention.ms", SET, "1")))[0] is (
        ErrorCode.unknown_topic_or_partition
    )
    assert topic.configs == {}


async def test_altered_configs_survive_a_restart(tmp_path: Any) -> None:
    async with running_server(topics=[("t1", 1)], data_dir=tmp_path) as node:
        client = await WireClient.connect(node.host, node.port)
        await incremental(client, 1, "t1", ("retention.ms", SET, "5000"))
        await client.close()
    async with running_server(data_dir=tmp_path) as node:
        topic = node.broker.topics.get("t1")
        assert topic is not None and topic.configs == {"retention.ms": "5000"}


def test_cluster_only_settings_are_accepted_and_typed() -> None:
    config = parse_settings(["offsets.topic.replication.factor=1", "broker.rack=r1"])
    assert config.cluster_only == {"offsets.topic.replication.factor": "1", "broker.rack": "r1"}
    with pytest.raises(ConfigError, match=r"offsets\.topic\.replication\.factor"):
        parse_settings(["offsets.topic.replication.factor=three"])
    with pytest.raises(ConfigError, match=r"offsets\.topic\.replication\.factor"):
        parse_settings(["offsets.topic.replication.factor=40000"])  # a short
    with pytest.raises(ConfigError, match=r"unknown setting 'no\.such\.setting'"):
        parse_settings(["no.such.setting=1"])


async def test_cluster_only_settings_are_announced_once_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="coordinator.serve"):
        async with running_server(settings=SETTINGS):
            pass
    announced = [
        r.getMessage() for r in caplog.records if "only matter on a cluster" in r.getMessage()
    ]
    assert len(announced) == 1
    assert "offsets.topic.replication.factor=1" in announced[0]
    assert "num.partitions" not in announced[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="coordinator.serve"):
        async with running_server():
            pass
    assert not [r for r in caplog.records if "only matter on a cluster" in r.getMessage()]


async def test_the_internal_offsets_topic_is_described_but_not_altered(
    client: WireClient,
) -> None:
    described = await describe(client, 4, TOPIC, "__consumer_offsets")
    configs = by_name(described)
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == (
        "compact",
        TOPIC_CONFIG,
    )
    assert configs["retention.ms"].config_source == DEFAULT_CONFIG
    altered = await alter(client, 2, [(TOPIC, "__consumer_offsets", {"retention.ms": "1"})])
    assert altered == [ErrorCode.invalid_request]
    answer = await incremental(client, 1, "__consumer_offsets", ("retention.ms", SET, "1"))
    assert answer[0] is ErrorCode.invalid_request


async def test_rebalance_serve_accepts_cluster_only_settings_and_says_so_once(
    tmp_path: Path,
) -> None:
    from serve_process import REBALANCE, STARTED, stop

    process = await asyncio.create_subprocess_exec(
        *REBALANCE, "serve", "--bind", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"),
        "--set", "offsets.topic.replication.factor=1", "--set", "transaction.state.log.min.isr=1",
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    STARTED.append(process.pid)
    assert process.stderr is not None
    before_listening = []
    while "listening on" not in (line := (await process.stderr.readline()).decode()):
        assert line, "the server exited before listening"
        before_listening.append(line)
    port = int(line.rsplit(":", 1)[1].split()[0])
    client = await WireClient.connect("127.0.0.1", port)
    shown = by_name(await describe(client, 4, BROKER, "1", ["offsets.topic.replication.factor"]))
    assert shown["offsets.topic.replication.factor"].value == "1"
    await client.close()
    rest = await stop(process)
    announced = [line for line in before_listening + rest.splitlines() if "only matter" in line]
    assert len(announced) == 1
    assert "offsets.topic.replication.factor=1, transaction.state.log.min.isr=1" in announced[0]
