"""DescribeConfigs (key 32): a topic's configs, or every setting this broker runs with.

Versions: kio's floor is v1 (config_source and synonyms instead of v0's is_default); v3
config_type and documentation; v4 flexible. aiokafka and kafka-python send v1-v2, librdkafka
v1-v4.

A topic shows all of Kafka's topic configs: its overrides (TOPIC_CONFIG) and, for the rest, the
broker setting of the same meaning when one was given (STATIC_BROKER_CONFIG) or Kafka's default
(DEFAULT_CONFIG); synonyms list them most specific first, on request. The broker shows every
setting of `coordinator.node.described_configs.BrokerSettings`, all read-only. `configuration_keys`
narrows the answer to those names (unknown names are left out; null or empty: all, as in
Kafka). Documentation is not sent (the field is nullable).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.config_resources import (
    BROKER,
    TOPIC,
    ResourceError,
    is_this_broker,
    topic_overrides,
    unsupported,
)
from coordinator.node.contract import Broker, RequestContext, ResponseValue
from coordinator.partition_log.topic_configs import describe_topic_configs
from coordinator.wire.config_entries import ConfigEntry, ConfigType

API_KEY = 32
VERSIONS = range(1, 5)


def _entries(broker: Broker, resource: Any) -> list[ConfigEntry]:
    settings = broker.settings
    resource_type, name = int(resource.resource_type), str(resource.resource_name)
    if resource_type == TOPIC:
        return describe_topic_configs(topic_overrides(broker, name), settings.explicit())
    if resource_type == BROKER:
        return settings.entries() if is_this_broker(broker, name) else []
    raise unsupported(resource_type)


def _shown(entry: ConfigEntry, synonyms: bool) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": entry.value,
        "read_only": entry.read_only,
        "config_source": int(entry.source),
        "is_sensitive": entry.kind is ConfigType.PASSWORD,  # its value is null, as in Kafka
        "synonyms": [
            {"name": name, "value": value, "source": int(source)}
            for name, value, source in (entry.synonyms if synonyms else ())
        ],
        "config_type": int(entry.kind),
        "documentation": None,
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    results = []
    for resource in request.resources:
        code, message, configs = ErrorCode.none, None, []
        try:
            entries = _entries(ctx.broker, resource)
            wanted = set(resource.configuration_keys or ())  # null or empty: all of them
            if wanted:
                entries = [e for e in entries if e.name in wanted]
            configs = [_shown(e, bool(request.include_synonyms)) for e in entries]
        except ResourceError as exc:
            code, message = exc.code, exc.message
        results.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": int(resource.resource_type),
                "resource_name": str(resource.resource_name),
                "configs": configs,
            }
        )
    return {"throttle_time": 0, "results": results}
