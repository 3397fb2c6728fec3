"""DeleteGroups (key 42). v1: same as v0; v2: flexible."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import GROUP_DENIED, per_group
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation
from rebalance.commands import DeleteGroups

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = range(0, 3)

#: DELETE on each group, else GROUP_AUTHORIZATION_FAILED for it.
AUTHORIZATION = Rule(
    per_group(
        "groups_names",
        "results",
        Operation.DELETE,
        lambda g: {"group_id": g, "error_code": GROUP_DENIED},
    )
)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(DeleteGroups(tuple(request.groups_names)))
    return {
        "throttle_time": 0,
        "results": [{"group_id": g, "error_code": int(code)} for g, code in reply.results],
    }
