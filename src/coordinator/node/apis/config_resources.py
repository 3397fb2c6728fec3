"""The config resources of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: finding a
topic or this broker from (resource_type, resource_name), with Kafka's errors.

Resource types: 2 topic, 4 broker (named by its node id; "" names the cluster-wide dynamic
defaults, of which this node has none), 8 broker logger. Broker loggers and the other types
(client metrics, groups) are answered INVALID_REQUEST: this node has no runtime-configurable
loggers or such configs (a deliberate difference from Kafka).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import Broker
from coordinator.partition_log.topics import InvalidTopicError, Topic, check_topic_name

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8


class ResourceError(Exception):
    """A resource that cannot be described or altered: its error code and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


INTERNAL_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "producer",
    "segment.bytes": "104857600",
}
"""The overrides Kafka creates `__consumer_offsets` with (`offsets.topic.segment.bytes`)."""


def topic_overrides(broker: Broker, name: str) -> dict[str, str]:
    """The config overrides of a topic, internal ones included (for describing)."""
    if name in broker.internal_topics:
        return dict(INTERNAL_TOPIC_CONFIGS)
    return find_topic(broker, name).configs


def find_topic(broker: Broker, name: str) -> Topic:
    """An ordinary topic. DIFFERS: the configs of an internal topic cannot be changed here
    (Kafka lets them be); they are only described (see `coordinator.partition_log.internal`)."""
    try:
        check_topic_name(name)
    except InvalidTopicError as exc:
        raise ResourceError(ErrorCode.invalid_topic_exception, str(exc)) from None
    if name in broker.internal_topics:
        raise ResourceError(
            ErrorCode.invalid_request, f"The configs of internal topic {name} cannot be changed."
        )
    topic = broker.topics.get(name)
    if topic is None:
        raise ResourceError(
            ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
        )
    return topic


def is_this_broker(broker: Broker, name: str) -> bool:
    """True for this node's id, False for "" (the cluster-wide defaults); else `ResourceError`."""
    if name == "":
        return False
    try:
        node_id = int(name)
    except ValueError:
        raise ResourceError(
            ErrorCode.invalid_request, f"Broker id must be an integer, but it is: {name}"
        ) from None
    if node_id != broker.node_id:
        raise ResourceError(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {broker.node_id} or empty string, but received {name}",
        )
    return True


def unsupported(resource_type: int) -> ResourceError:
    what = "broker loggers" if resource_type == BROKER_LOGGER else f"resource type {resource_type}"
    return ResourceError(ErrorCode.invalid_request, f"This node has no configs for {what}.")


def repeated(resources: Iterable[Any]) -> set[tuple[int, str]]:
    """(type, name) of the resources a request names more than once (all get INVALID_REQUEST)."""
    counts = Counter((int(r.resource_type), str(r.resource_name)) for r in resources)
    return {key for key, count in counts.items() if count > 1}


def resource_answer(resource: Any, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": int(resource.resource_type),
        "resource_name": str(resource.resource_name),
    }
