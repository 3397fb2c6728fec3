"""ConsumerGroupDescribe (key 69), KIP-848's describe. Flexible from v0; v1 adds MemberType:
1 for a member that speaks the consumer protocol, 0 for a classic one (online migration)."""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.apis.operations import GROUP_OPERATIONS, NOT_REQUESTED, if_requested
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.consumer_group.commands import ConsumerGroupDescribe
from rebalance.consumer_group.replies import NamedAssignment
from rebalance.errors import ErrorCode

API_KEY = 69
VERSIONS = range(0, 2)
#: Kafka's `MemberType`: -1 unknown, 0 classic, 1 consumer.
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1


def _assignment(assignment: NamedAssignment) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": uuid.UUID(topic_id), "topic_name": name, "partitions": list(ps)}
            for topic_id, name, ps in assignment
        ]
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(ConsumerGroupDescribe(tuple(request.group_ids)))
    asked = request.include_authorized_operations
    return {
        "throttle_time": 0,
        "groups": [
            {
                "error_code": int(g.error),
                "error_message": g.error_message,
                "group_id": g.group_id,
                "group_state": g.state,
                "group_epoch": g.group_epoch,
                "assignment_epoch": g.assignment_epoch,
                "assignor_name": g.assignor,
                "members": [
                    {
                        "member_id": m.member_id,
                        "instance_id": m.instance_id,
                        "rack_id": m.rack_id,
                        "member_epoch": m.member_epoch,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "subscribed_topic_names": list(m.subscribed_topic_names),
                        "subscribed_topic_regex": m.subscribed_topic_regex,
                        "assignment": _assignment(m.assignment),
                        "target_assignment": _assignment(m.target_assignment),
                        "member_type": CLASSIC_MEMBER if m.classic else CONSUMER_MEMBER,
                    }
                    for m in g.members
                ],
                "authorized_operations": (
                    if_requested(asked, GROUP_OPERATIONS)
                    if g.error is ErrorCode.NONE
                    else NOT_REQUESTED
                ),
            }
            for g in reply.groups
        ],
    }
