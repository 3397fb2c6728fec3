"""DescribeCluster (key 60): the cluster id, the controller and the brokers: the live nodes.

Versions: v0 (flexible from the start); v1 endpoint_type (1 brokers, 2 controllers); v2
include_fenced_brokers and is_fenced. librdkafka's `describe_cluster` sends it; kafka-python
and aiokafka describe the cluster from Metadata.

The brokers are the node's `Ownership.live_nodes()` (this node alone without cluster mode), this
one at the address of the listener asked; the lowest live node id acts as the controller
(Metadata says the same). Asked for
controller endpoints, it answers MISMATCHED_ENDPOINT_TYPE as a Kafka broker does: clients that
want the controllers bootstrap from a controller listener, which this node does not have.
Authorized operations are not computed (there is no authorizer), as in Metadata.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.authorization import Rule
from coordinator.node.authorization.operations import (
    CLUSTER_OPERATIONS,
    cluster_operations,
    if_requested,
)
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.node.coordinators import controller_id, live_brokers
from coordinator.wire.api_keys import ApiKey

API_KEY = ApiKey.DESCRIBE_CLUSTER
VERSIONS = range(0, 3)

#: Anyone may describe the cluster; its authorized operations come from the authorizer (KIP-430).
AUTHORIZATION = Rule(after=cluster_operations)

BROKER_ENDPOINTS = 1


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    broker = ctx.broker
    brokers = live_brokers(ctx)
    endpoint_type = int(getattr(request, "endpoint_type", BROKER_ENDPOINTS))
    answer: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": broker.config.cluster_id,
        "controller_id": controller_id(brokers),
        "brokers": [
            {
                "broker_id": node.node_id,
                "host": node.host,
                "port": node.port,
                "rack": node.rack,
                "is_fenced": False,
            }
            for node in brokers
        ],
        "cluster_authorized_operations": if_requested(
            getattr(request, "include_cluster_authorized_operations", False), CLUSTER_OPERATIONS
        ),
    }
    if endpoint_type != BROKER_ENDPOINTS:
        answer.update(
            error_code=ErrorCode.mismatched_endpoint_type,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted "
            "an endpoint of type CONTROLLER",
            brokers=[],
            controller_id=-1,
        )
    return answer
