"""ListGroups (key 16). v1: throttle time; v3: flexible; v4: StatesFilter and GroupState
(KIP-518); v5: TypesFilter and GroupType (KIP-848)."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.access_control import AccessControl
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import GROUP, may, may_on_cluster
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation
from rebalance.commands import ListGroups

API_KEY = ApiKey.LIST_GROUPS
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


def _visible(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    """Every group with DESCRIBE on the cluster, else only those it may DESCRIBE."""
    if may_on_cluster(access, ctx, Operation.DESCRIBE):
        return answer
    groups = [
        g
        for g in answer.get("groups", [])
        if may(access, ctx, Operation.DESCRIBE, GROUP, g["group_id"])
    ]
    return {**answer, "groups": groups}


AUTHORIZATION = Rule(after=_visible)
