"""FindCoordinator (key 10): this single node coordinates every group.

Versions: v1 added key_type and error_message; v3 flexible; v4 (KIP-699) batches keys:
`coordinator_keys` in, `coordinators[]` out; v6 added key type 2 (share groups).
aiokafka sends v1, librdkafka v2, kafka-python v6.

Key types: 0 = consumer group → this node. 1 = transaction → COORDINATOR_NOT_AVAILABLE (this
server has no transaction coordinator). 2 = share group (v6+) → COORDINATOR_NOT_AVAILABLE (no
share-group support); below v6, and any other type → INVALID_REQUEST. Error entries carry
node_id -1, host "" and port -1, as Kafka's do.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 10
VERSIONS = range(0, 7)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2


def locate(key_type: int, api_version: int, ctx: RequestContext) -> dict[str, Any]:
    """The coordinator entry for one key (without the key itself)."""
    if key_type == GROUP_KEY_TYPE:
        host, port = ctx.advertised_address()
        return {
            "node_id": ctx.broker.node_id,
            "host": host,
            "port": port,
            "error_code": ErrorCode.none,
            "error_message": None,
        }
    if key_type == TRANSACTION_KEY_TYPE:
        return _error(ErrorCode.coordinator_not_available, "transactions are not supported")
    if key_type == SHARE_KEY_TYPE and api_version >= 6:
        return _error(ErrorCode.coordinator_not_available, "share groups are not supported")
    return _error(ErrorCode.invalid_request, f"key type {key_type} is not valid in v{api_version}")


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": message}


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    if api_version >= 4:
        return {
            "throttle_time": 0,
            "coordinators": [
                {"key": key, **locate(key_type, api_version, ctx)}
                for key in request.coordinator_keys
            ],
        }
    return {"throttle_time": 0, **locate(key_type, api_version, ctx)}
