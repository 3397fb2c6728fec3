"""ListGroups (key 16). v1: throttle time; v3: flexible; v4: StatesFilter and GroupState
(KIP-518); v5: TypesFilter and GroupType (KIP-848)."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.commands import ListGroups

API_KEY = 16
VERSIONS = range(0, 6)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    command = ListGroups(
        tuple(getattr(request, "states_filter", ())), tuple(getattr(request, "types_filter", ()))
    )
    reply = await runtime(ctx).submit(command)
    return {
        "throttle_time": 0,
        "error_code": int(reply.error),
        "groups": [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "group_state": g.state,
                "group_type": g.group_type,
            }
            for g in reply.groups
        ],
    }
