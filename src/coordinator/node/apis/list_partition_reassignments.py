"""ListPartitionReassignments (key 46, KIP-455): the reassignments in progress.

Versions: v0 only (flexible). The Java admin client's `listPartitionReassignments` and
`kafka-reassign-partitions.sh --verify` send it.

A reassignment on this node moves no data (every partition's one replica is already here; see
`alter_partition_reassignments`), so none is ever in progress: the answer lists no topics,
whichever partitions are asked for, known or not, as a single Kafka broker answers. Without
DESCRIBE on the cluster (when an authorizer runs) it is CLUSTER_AUTHORIZATION_FAILED
(`coordinator.node.authorization`).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE, on_cluster
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS
VERSIONS = range(0, 1)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "topics": []}


#: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
AUTHORIZATION = Rule(
    on_cluster(
        Operation.DESCRIBE,
        lambda r: {
            "throttle_time": 0,
            "error_code": CLUSTER_DENIED,
            "error_message": CLUSTER_DENIED_MESSAGE,
            "topics": [],
        },
    )
)
