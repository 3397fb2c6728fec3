"""AlterConfigs (key 33): replace a topic's config overrides with the ones given.

Versions: v0-v1 the same fields; v2 flexible. kafka-python and aiokafka send v0-v1, librdkafka
v0-v2. The legacy API is not incremental: overrides not named in the request are removed, as in
Kafka; a config given with a null value is left at its default. See `topic_config_changes`.
"""

from __future__ import annotations

from typing import Any

from coordinator.node.apis.topic_config_changes import alter_each
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import config_resource, per_entry
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.partition_log.topic_configs import validate_topic_configs
from coordinator.partition_log.topics import Topic
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.ALTER_CONFIGS
VERSIONS = range(0, 3)

#: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or, for the broker, the cluster
#: (CLUSTER_AUTHORIZATION_FAILED).
AUTHORIZATION = Rule(
    per_entry(
        "resources", "responses", config_resource(Operation.ALTER_CONFIGS, with_configs=False)
    )
)


def _replaced(topic: Topic, resource: Any) -> dict[str, str]:
    return validate_topic_configs(
        {c.name: c.value for c in resource.configs if c.value is not None}
    )


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return await alter_each(request, _replaced, ctx)
