"""DeleteGroups (key 42). v1: same as v0; v2: flexible."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.commands import DeleteGroups

API_KEY = 42
VERSIONS = range(0, 3)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(DeleteGroups(tuple(request.groups_names)))
    return {
        "throttle_time": 0,
        "results": [{"group_id": g, "error_code": int(code)} for g, code in reply.results],
    }
