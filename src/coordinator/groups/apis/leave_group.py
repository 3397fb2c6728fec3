"""LeaveGroup (key 13).

v0-v2 carry one MemberId and one error (the top-level error, else the first member's); v3
batches Members[MemberId, GroupInstanceId] with per-member errors (KIP-345); v4: flexible;
v5: Members[].Reason (KIP-800).
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.classic.commands import LeaveGroup, LeavingMember
from rebalance.classic.replies import LeaveGroupReply

API_KEY = 13
VERSIONS = range(0, 6)


def to_command(request: Any, api_version: int) -> LeaveGroup:
    if api_version < 3:
        members: tuple[LeavingMember, ...] = (LeavingMember(request.member_id),)
    else:
        members = tuple(
            LeavingMember(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in request.members
        )
    return LeaveGroup(request.group_id, members, api_version)


def to_response(reply: LeaveGroupReply, api_version: int) -> dict[str, Any]:
    if api_version < 3:
        return {"throttle_time": 0, "error_code": int(reply.folded_error)}
    return {
        "throttle_time": 0,
        "error_code": int(reply.error),
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "error_code": int(m.error),
            }
            for m in reply.members
        ],
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version))
    return to_response(reply, api_version)
