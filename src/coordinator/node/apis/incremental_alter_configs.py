"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from topic configs.

Versions: v0; v1 flexible. librdkafka, kafka-python and aiokafka (when they offer it) send
v0-v1. Operations, as in Kafka: SET (0) an override; DELETE (1) one, back to the default; APPEND
(2) and SUBTRACT (3) items of a LIST config (cleanup.policy, the throttled-replica lists), starting
from its current value, override or default; on any other type they are INVALID_CONFIG. A config
named twice in one resource, or an unknown operation, is INVALID_REQUEST. See
`topic_config_changes`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.config_resources import ResourceError
from coordinator.node.apis.topic_config_changes import alter_each
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import config_resource, per_entry
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.partition_log.topic_configs import (
    TOPIC_CONFIGS,
    InvalidConfigError,
    list_items,
    validate_topic_config,
)
from coordinator.partition_log.topics import Topic
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.config_entries import ConfigType
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
VERSIONS = range(0, 2)

#: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or, for the broker, the cluster
#: (CLUSTER_AUTHORIZATION_FAILED).
AUTHORIZATION = Rule(
    per_entry(
        "resources", "responses", config_resource(Operation.ALTER_CONFIGS, with_configs=False)
    )
)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _current(configs: dict[str, str], name: str) -> list[str]:
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    if definition.kind is not ConfigType.LIST:
        raise InvalidConfigError(
            f"Config value append or subtract is not allowed for config key: {name}"
        )
    return list_items(configs.get(name, definition.default))


def _changed(topic: Topic, resource: Any) -> dict[str, str]:
    names = Counter(c.name for c in resource.configs)
    if any(count > 1 for count in names.values()):
        raise ResourceError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    configs = dict(topic.configs)
    for change in resource.configs:
        name, operation, value = change.name, int(change.config_operation), change.value
        if operation == SET:
            configs[name] = validate_topic_config(name, value)
        elif operation == DELETE:
            if name not in TOPIC_CONFIGS:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            configs.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            items = _current(configs, name)
            given = list_items(value or "")
            if operation == APPEND:
                items += [item for item in given if item not in items]
            else:
                items = [item for item in items if item not in given]
            configs[name] = validate_topic_config(name, ",".join(items))
        else:
            raise ResourceError(
                ErrorCode.invalid_request, f"Unknown config operation {operation} for {name}"
            )
    return configs


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return await alter_each(request, _changed, ctx)
