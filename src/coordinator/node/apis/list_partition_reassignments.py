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

from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 46
VERSIONS = range(0, 1)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "topics": []}
