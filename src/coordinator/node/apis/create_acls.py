"""CreateAcls (key 30): store ACLs (`coordinator.wire.security.acls`), durable before the answer.

v1 added pattern types (v0 is below kio's floor); v2 flexible; v3 same. Needs ALTER on the
cluster. Each creation is answered on its own: INVALID_REQUEST with the reason for one Kafka
would refuse (a filter-only value such as ANY, a principal that is not TYPE:NAME), NONE for the
others (creating an ACL that exists changes nothing). Without an authorizer: SECURITY_DISABLED.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.acl_common import access_of, cluster_denied, disabled
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import on_cluster
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import (
    Acl,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

API_KEY = ApiKey.CREATE_ACLS
VERSIONS = range(1, 4)


def _refused(request: Any, code: ErrorCode, message: str) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "results": [{"error_code": code, "error_message": message} for _ in request.creations],
    }


AUTHORIZATION = Rule(
    on_cluster(Operation.ALTER, lambda r: _refused(r, *cluster_denied(Operation.ALTER)))
)


def _acl(creation: Any) -> Acl:
    try:
        return Acl(
            ResourceType(creation.resource_type),
            creation.resource_name,
            PatternType(creation.resource_pattern_type),
            creation.principal,
            creation.host,
            Operation(creation.operation),
            Permission(creation.permission_type),
        ).check()
    except ValueError as exc:  # InvalidAcl, or a code Kafka does not define
        raise InvalidAcl(str(exc)) from None


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    off = disabled(ctx)
    if off is not None:
        return _refused(request, *off)
    results: list[dict[str, Any]] = []
    valid: list[Acl] = []
    for creation in request.creations:
        try:
            valid.append(_acl(creation))
        except InvalidAcl as exc:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": str(exc)})
        else:
            results.append({"error_code": ErrorCode.none, "error_message": None})
    access_of(ctx).acls.add(valid)
    return {"throttle_time": 0, "results": results}
