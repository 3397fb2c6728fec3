"""DescribeGroups (key 15). v1: throttle time; v3: authorized operations (asked for with
IncludeAuthorizedOperations: every group operation, as a broker without an authorizer answers,
see `coordinator.node.authorization.operations`); v4: member GroupInstanceId; v5: flexible. v6
(GROUP_ID_NOT_FOUND for unknown groups) is not advertised: before it, an unknown group is
described as "Dead" with no error, which admin tools expect."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import ErrorReader, described_denied, runtime
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import per_group
from coordinator.node.authorization.operations import (
    GROUP_AUTHORIZED_OPERATIONS,
    GROUP_OPERATIONS,
    NOT_REQUESTED,
    if_requested,
)
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation
from rebalance.commands import DescribeGroups
from rebalance.errors import ErrorCode
from rebalance.replies import DescribedGroup, DescribedMember, DescribeGroupsReply

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = range(0, 6)

#: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it; authorized operations from the
#: authorizer (KIP-430).
AUTHORIZATION = Rule(
    per_group("groups", "groups", Operation.DESCRIBE, described_denied),
    GROUP_AUTHORIZED_OPERATIONS,
)


def to_command(request: Any, api_version: int) -> DescribeGroups:
    return DescribeGroups(tuple(request.groups))


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version))
    return to_response(reply, getattr(request, "include_authorized_operations", False))


def to_response(reply: DescribeGroupsReply, asked: bool) -> dict[str, Any]:
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


# -- the client's side: the core's command as this request, the response as the core's reply
COMMAND = DescribeGroups


def request_values(command: DescribeGroups, version: int) -> dict[str, Any]:
    return {"groups": list(command.group_ids), "include_authorized_operations": False}


def reply_of(r: Any, error: ErrorReader) -> DescribeGroupsReply:
    return DescribeGroupsReply(
        tuple(
            DescribedGroup(
                g.group_id,
                error(g.error_code),
                g.group_state,
                g.protocol_type,
                g.protocol_data,
                tuple(
                    DescribedMember(
                        m.member_id,
                        getattr(m, "group_instance_id", None),
                        m.client_id,
                        m.client_host,
                        bytes(m.member_metadata),
                        bytes(m.member_assignment),
                    )
                    for m in g.members
                ),
            )
            for g in r.groups
        )
    )
