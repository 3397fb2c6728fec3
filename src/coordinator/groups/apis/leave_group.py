"""LeaveGroup (key 13).

v0-v2 carry one MemberId and one error (the top-level error, else the first member's); v3
batches Members[MemberId, GroupInstanceId] with per-member errors (KIP-345); v4: flexible;
v5: Members[].Reason (KIP-800).
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import ErrorReader, runtime
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import GROUP_DENIED, group_read
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from rebalance.classic.commands import LeaveGroup, LeavingMember
from rebalance.classic.replies import LeaveGroupReply, LeftMember

API_KEY = ApiKey.LEAVE_GROUP
VERSIONS = range(0, 6)

#: READ on the group, else GROUP_AUTHORIZATION_FAILED (KafkaApis.handleLeaveGroupRequest).
AUTHORIZATION = Rule(
    group_read(lambda r: {"throttle_time": 0, "error_code": GROUP_DENIED, "members": []})
)


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


# -- the client's side: the core's command as this request, the response as the core's reply
COMMAND = LeaveGroup


def request_values(command: LeaveGroup, version: int) -> dict[str, Any]:
    """One member id before v3, a list of members from v3."""
    if version < 3:
        (only,) = command.members
        return {"group_id": command.group_id, "member_id": only.member_id}
    return {
        "group_id": command.group_id,
        "members": [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "reason": m.reason}
            for m in command.members
        ],
    }


def reply_of(r: Any, error: ErrorReader) -> LeaveGroupReply:
    members = tuple(
        LeftMember(m.member_id, m.group_instance_id, error(m.error_code))
        for m in getattr(r, "members", ())
    )
    return LeaveGroupReply(error(r.error_code), members)
