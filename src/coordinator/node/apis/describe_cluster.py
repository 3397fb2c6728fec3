"""DescribeCluster (key 60): the cluster id, the controller and the brokers: this node.

Versions: v0 (flexible from the start); v1 endpoint_type (1 brokers, 2 controllers); v2
include_fenced_brokers and is_fenced. librdkafka's `describe_cluster` sends it; kafka-python
and aiokafka describe the cluster from Metadata.

This node is the only broker and also acts as the controller (Metadata says the same). Asked for
controller endpoints, it answers MISMATCHED_ENDPOINT_TYPE as a Kafka broker does: clients that
want the controllers bootstrap from a controller listener, which this node does not have.
Authorized operations are not computed (there is no authorizer), as in Metadata.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.operations import CLUSTER_OPERATIONS, if_requested
from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 60
VERSIONS = range(0, 3)

BROKER_ENDPOINTS = 1


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    broker = ctx.broker
    host, port = ctx.advertised_address()
    endpoint_type = int(getattr(request, "endpoint_type", BROKER_ENDPOINTS))
    answer: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": broker.config.cluster_id,
        "controller_id": broker.node_id,
        "brokers": [
            {
                "broker_id": broker.node_id,
                "host": host,
                "port": port,
                "rack": None,
                "is_fenced": False,
            }
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
