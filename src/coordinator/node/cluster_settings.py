"""Broker settings that only matter on a cluster of several brokers: accepted, shown, inert.

Test brokers are configured with them (`offsets.topic.replication.factor=1`,
`transaction.state.log.min.isr=1`, ...), so a `--set` of any of them is accepted when its value
has the right type, announced once at start as having no effect on this single node, and listed
by DescribeConfigs (given or Kafka's default). `min.insync.replicas` and
`unclean.leader.election.enable` also become the defaults of the topic configs of the same name,
as in Kafka. Any other key of Kafka's broker is accepted by `coordinator.node.kafka_settings`.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.wire.config_entries import ConfigType

INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

CLUSTER_ONLY: Mapping[str, tuple[ConfigType, str]] = {
    "auto.leader.rebalance.enable": (ConfigType.BOOLEAN, "true"),
    "broker.rack": (ConfigType.STRING, ""),
    "controlled.shutdown.enable": (ConfigType.BOOLEAN, "true"),
    "controlled.shutdown.max.retries": (ConfigType.INT, "3"),
    "default.replication.factor": (ConfigType.INT, "1"),
    "leader.imbalance.check.interval.seconds": (ConfigType.LONG, "300"),
    "leader.imbalance.per.broker.percentage": (ConfigType.INT, "10"),
    "min.insync.replicas": (ConfigType.INT, "1"),
    "num.replica.fetchers": (ConfigType.INT, "1"),
    "offsets.commit.required.acks": (ConfigType.SHORT, "-1"),
    "offsets.commit.timeout.ms": (ConfigType.INT, "5000"),
    "offsets.topic.replication.factor": (ConfigType.SHORT, "3"),
    "replica.fetch.max.bytes": (ConfigType.INT, "1048576"),
    "replica.lag.time.max.ms": (ConfigType.LONG, "30000"),
    "replica.socket.timeout.ms": (ConfigType.INT, "30000"),
    "transaction.state.log.min.isr": (ConfigType.INT, "2"),
    "transaction.state.log.replication.factor": (ConfigType.SHORT, "3"),
    "unclean.leader.election.enable": (ConfigType.BOOLEAN, "false"),
}
"""Kafka name -> (type, Kafka's default)."""


def check_cluster_setting(key: str, raw: str) -> str:
    """The value as stored, or `ValueError` saying what the key takes."""
    kind, _ = CLUSTER_ONLY[key]
    text = raw.strip()
    if kind is ConfigType.BOOLEAN:
        if text.lower() not in {"true", "false"}:
            raise ValueError(f"takes true or false, got {raw!r}")
        return text.lower()
    if kind is ConfigType.STRING:
        return text
    low, high = {ConfigType.SHORT: INT16, ConfigType.INT: INT32}.get(kind, INT64)
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"takes a whole number, got {raw!r}") from None
    if not low <= number <= high:
        raise ValueError(f"must be in [{low}, {high}], got {number}")
    return str(number)
