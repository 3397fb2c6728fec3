"""DescribeGroups (key 15). v1: throttle time; v3: authorized operations; v4: member
GroupInstanceId; v5: flexible. v6 (GROUP_ID_NOT_FOUND for unknown groups) is not advertised:
before it, an unknown group is described as "Dead" with no error, which admin tools expect."""

from __future__ import annotations

from typing import Any

from coordinator.apis.common import runtime
from coordinator.apis.contract import RequestContext, ResponseValue
from rebalance.commands import DescribeGroups

API_KEY = 15
VERSIONS = range(0, 6)

#: Kafka's "authorized operations not requested" sentinel (INT32_MIN).
OPERATIONS_OMITTED = -(2**31)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(DescribeGroups(tuple(request.groups)))
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
                "authorized_operations": OPERATIONS_OMITTED,
            }
            for g in reply.groups
        ],
    }
