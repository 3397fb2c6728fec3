"""FindCoordinator (key 10): the node that coordinates a group, as the node's `Ownership` says.

Versions: v1 added key_type and error_message; v3 flexible; v4 (KIP-699) batches keys:
`coordinator_keys` in, `coordinators[]` out; v6 added key type 2 (share groups).
aiokafka sends v1, librdkafka v2, kafka-python v6.

Key types:
- 0 = consumer group → the owner of the group's `__consumer_offsets` partition (this node, at
  the address of the listener asked, when it owns it; a single node owns every partition);
  COORDINATOR_NOT_AVAILABLE while no node holds it (Kafka: partition leader missing or not
  alive). The owner may have moved since: the node asked then refuses with NOT_COORDINATOR and
  the client asks again, as with Kafka's metadata cache.
- 1 = transaction → COORDINATOR_NOT_AVAILABLE (this server has no transaction coordinator).
- 2 = share group (v6+) → COORDINATOR_NOT_AVAILABLE (no share-group support); below v6, and any
  other type → INVALID_REQUEST.

Error entries carry node_id -1, host "" and port -1, as Kafka's do.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.access_control import AccessControl
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import GROUP, GROUP_DENIED, may
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.node.coordinators import coordinator_of
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.FIND_COORDINATOR
VERSIONS = range(0, 7)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2

#: Kafka's message for the error (`Errors.COORDINATOR_NOT_AVAILABLE.message()`).
NOT_AVAILABLE = "The coordinator is not available."


def locate(key: str, key_type: int, api_version: int, ctx: RequestContext) -> dict[str, Any]:
    """The coordinator entry for one key (without the key itself)."""
    if key_type == GROUP_KEY_TYPE:
        owner = coordinator_of(ctx, key)
        if owner is None:
            return _error(ErrorCode.coordinator_not_available, NOT_AVAILABLE)
        return {
            "node_id": owner.node_id,
            "host": owner.host,
            "port": owner.port,
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
                {"key": key, **locate(key, key_type, api_version, ctx)}
                for key in request.coordinator_keys
            ],
        }
    return {"throttle_time": 0, **locate(request.key, key_type, api_version, ctx)}


def _authorize(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
    """Group keys: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for that key."""
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    if key_type != GROUP_KEY_TYPE:
        return None
    keys = list(request.coordinator_keys) if version >= 4 else [request.key]
    if all(may(access, ctx, Operation.DESCRIBE, GROUP, k) for k in keys):
        return None

    def entry(key: str) -> dict[str, Any]:
        if may(access, ctx, Operation.DESCRIBE, GROUP, key):
            return locate(key, key_type, version, ctx)
        return {
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": GROUP_DENIED,
            "error_message": None,
        }

    if version >= 4:
        return {"throttle_time": 0, "coordinators": [{"key": k, **entry(k)} for k in keys]}
    return {"throttle_time": 0, **entry(keys[0])}


AUTHORIZATION = Rule(_authorize)
