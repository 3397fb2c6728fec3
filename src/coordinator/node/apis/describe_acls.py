"""DescribeAcls (key 29): the ACLs a filter matches, grouped by resource pattern.

v1 added pattern types; v2 flexible; v3 same. Needs DESCRIBE on the cluster. Without an
authorizer: SECURITY_DISABLED, as Kafka answers.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.acl_common import access_of, cluster_denied, disabled, read_filter
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import on_cluster
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Acl, Operation

API_KEY = ApiKey.DESCRIBE_ACLS
VERSIONS = range(1, 4)


def _refused(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "error_message": message, "resources": []}


AUTHORIZATION = Rule(
    on_cluster(Operation.DESCRIBE, lambda r: _refused(*cluster_denied(Operation.DESCRIBE)))
)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    off = disabled(ctx)
    if off is not None:
        return _refused(*off)
    try:
        selector = read_filter(request)
    except ValueError as exc:
        return _refused(ErrorCode.invalid_request, str(exc))
    by_pattern: dict[tuple[int, str, int], list[Acl]] = {}
    for acl in access_of(ctx).acls.all():
        if selector.matches(acl):
            key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
            by_pattern.setdefault(key, []).append(acl)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "resources": [
            {
                "resource_type": kind,
                "resource_name": name,
                "pattern_type": pattern,
                "acls": [
                    {
                        "principal": a.principal,
                        "host": a.host,
                        "operation": int(a.operation),
                        "permission_type": int(a.permission),
                    }
                    for a in acls
                ],
            }
            for (kind, name, pattern), acls in by_pattern.items()
        ],
    }
