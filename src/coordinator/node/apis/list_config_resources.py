"""ListConfigResources (key 74, KIP-1142): the resources that have configs DescribeConfigs shows.

Versions: v0 was ListClientMetricsResources (KIP-714: only client-metrics resources, and no
resource types in the request); v1 asks for `resource_types` (none: all). The Java admin
client's `listConfigResources` and `kafka-configs.sh --describe` without a name send v1;
`listClientMetricsResources` sends v0.

Answered as Kafka 4.4's broker answers, in its order: the broker logger and the broker (both
named by this node's id), then every topic (the internal ones too) in name order. A resource
type Kafka does not list (anything but topic 2, broker 4, broker logger 8, client metrics 16,
group 32) answers UNSUPPORTED_VERSION with nothing listed. Client metrics and groups have no
configs here (DescribeConfigs does not describe them), so none are listed: v0 always answers an
empty list. Without DESCRIBE_CONFIGS on the cluster (when an authorizer runs) it is
CLUSTER_AUTHORIZATION_FAILED (`coordinator.node.authorization`).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.config_resources import BROKER, BROKER_LOGGER, TOPIC
from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 74
VERSIONS = range(0, 2)

CLIENT_METRICS, GROUP = 16, 32
LISTED = (BROKER_LOGGER, BROKER, TOPIC, CLIENT_METRICS, GROUP)


def _resources(kind: int, ctx: RequestContext) -> list[dict[str, Any]]:
    broker = ctx.broker
    if kind in (BROKER_LOGGER, BROKER):
        return [{"resource_name": str(broker.node_id), "resource_type": kind}]
    if kind == TOPIC:
        names = sorted([t.name for t in broker.internal_topics] + [t.name for t in broker.topics])
        return [{"resource_name": name, "resource_type": TOPIC} for name in names]
    return []


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    answer: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none}
    if api_version == 0:
        return {**answer, "config_resources": []}
    asked = {int(t) for t in request.resource_types} or set(LISTED)
    if not asked <= set(LISTED):
        return {**answer, "error_code": ErrorCode.unsupported_version, "config_resources": []}
    listed = [r for kind in LISTED if kind in asked for r in _resources(kind, ctx)]
    return {**answer, "config_resources": listed}
