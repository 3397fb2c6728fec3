"""InitProducerId (key 22): producer ids for idempotent (not transactional) producers.

Versions: v1 only changed throttling; v2 flexible; v3 (KIP-360) lets a producer pass its
current id/epoch to bump the epoch; v4-v6 add no request semantics we use. kafka-python and the
Java client enable idempotence by default and call this before their first Produce.

A fresh id with epoch 0 is returned; a v3+ request that names an id gets the same id with the
epoch bumped. Transactions are not supported: a transactional_id answers
COORDINATOR_NOT_AVAILABLE. Each partition log recognises a retried batch by producer id, epoch
and sequence numbers and does not store it twice
(`coordinator.partition_log.partition.ProducerBatches`); sequence gaps are not rejected.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 22
VERSIONS = range(0, 7)

MAX_EPOCH = 32767


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    if request.transactional_id is not None:
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.coordinator_not_available,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    current_id = getattr(request, "producer_id", -1)
    current_epoch = getattr(request, "producer_epoch", -1)
    if current_id >= 0 and 0 <= current_epoch < MAX_EPOCH:
        producer_id, epoch = current_id, current_epoch + 1
    else:
        producer_id, epoch = ctx.broker.producer_ids.allocate(), 0
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }
