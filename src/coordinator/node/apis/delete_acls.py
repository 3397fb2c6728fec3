"""DeleteAcls (key 31): remove the ACLs each filter matches, durable before the answer.

v1 added pattern types; v2 flexible; v3 same. Needs ALTER on the cluster. Each filter's result
lists the ACLs it removed. Without an authorizer: SECURITY_DISABLED.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.acl_common import (
    access_of,
    binding,
    cluster_denied,
    disabled,
    read_filter,
)
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import on_cluster
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.DELETE_ACLS
VERSIONS = range(1, 4)


def _refused(request: Any, code: ErrorCode, message: str) -> dict[str, Any]:
    failed = {"error_code": code, "error_message": message, "matching_acls": []}
    return {"throttle_time": 0, "filter_results": [dict(failed) for _ in request.filters]}


AUTHORIZATION = Rule(
    on_cluster(Operation.ALTER, lambda r: _refused(r, *cluster_denied(Operation.ALTER)))
)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    off = disabled(ctx)
    if off is not None:
        return _refused(request, *off)
    results: list[dict[str, Any]] = []
    for wire in request.filters:
        try:
            selector = read_filter(wire)
        except ValueError as exc:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": str(exc),
                            "matching_acls": []})  # fmt: skip
            continue
        removed = access_of(ctx).acls.remove(selector)
        results.append({"error_code": ErrorCode.none, "error_message": None,
                        "matching_acls": [binding(acl) for acl in removed]})  # fmt: skip
    return {"throttle_time": 0, "filter_results": results}
