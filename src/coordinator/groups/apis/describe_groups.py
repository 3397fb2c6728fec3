"""DescribeGroups (key 15). v1: throttle time; v3: authorized operations (asked for with
IncludeAuthorizedOperations: every group operation, as a broker without an authorizer answers,
see `coordinator.node.apis.operations`); v4: member GroupInstanceId; v5: flexible. v6
(GROUP_ID_NOT_FOUND for unknown groups) is not advertised: before it, an unknown group is
described as "Dead" with no error, which admin tools expect."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.apis.operations import GROUP_OPERATIONS, NOT_REQUESTED, if_requested
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.commands import DescribeGroups
from rebalance.errors import ErrorCode

API_KEY = 15
VERSIONS = range(0, 6)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(DescribeGroups(tuple(request.groups)))
    asked = getattr(request, "include_authorized_operations", False)
    return {
        "throttle_time": 0,
        "groups": [
            {
                "error_code": int(g.error),
                "group_id": g.group_id,
                "group_state": g.state,
                "protocol_type": g.protocol_type,
                "protocol_data": g.protocol_data,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in g.members
                ],
                # Kafka fills it only for groups described without an error.
                "authorized_operations": (
                    if_requested(asked, GROUP_OPERATIONS)
                    if g.error is ErrorCode.NONE
                    else NOT_REQUESTED
                ),
            }
            for g in reply.groups
        ],
    }
