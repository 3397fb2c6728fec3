"""ConsumerGroupDescribe (key 69), KIP-848's describe. Flexible from v0; v1 adds MemberType:
1 for a member that speaks the consumer protocol, 0 for a classic one (online migration)."""

from __future__ import annotations

import uuid
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
from rebalance.consumer_group.commands import ConsumerGroupDescribe
from rebalance.consumer_group.replies import (
    ConsumerGroupDescribeReply,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    NamedAssignment,
)
from rebalance.errors import ErrorCode

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
VERSIONS = range(0, 2)

#: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it; authorized operations from the
#: authorizer (KIP-430).
AUTHORIZATION = Rule(
    per_group("group_ids", "groups", Operation.DESCRIBE, described_denied),
    GROUP_AUTHORIZED_OPERATIONS,
)
#: Kafka's `MemberType`: -1 unknown, 0 classic, 1 consumer.
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1


def _assignment(assignment: NamedAssignment) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": uuid.UUID(topic_id), "topic_name": name, "partitions": list(ps)}
            for topic_id, name, ps in assignment
        ]
    }


def to_command(request: Any, api_version: int) -> ConsumerGroupDescribe:
    return ConsumerGroupDescribe(tuple(request.group_ids))


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version))
    return to_response(reply, request.include_authorized_operations)


def to_response(reply: ConsumerGroupDescribeReply, asked: bool) -> dict[str, Any]:
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


# -- the client's side: the core's command as this request, the response as the core's reply
COMMAND = ConsumerGroupDescribe


def request_values(command: ConsumerGroupDescribe, version: int) -> dict[str, Any]:
    return {"group_ids": list(command.group_ids), "include_authorized_operations": False}


def reply_of(r: Any, error: ErrorReader) -> ConsumerGroupDescribeReply:
    return ConsumerGroupDescribeReply(
        tuple(
            DescribedConsumerGroup(
                g.group_id,
                error(g.error_code),
                g.error_message,
                g.group_state,
                int(g.group_epoch),
                int(g.assignment_epoch),
                g.assignor_name,
                tuple(_described_member(m) for m in g.members),
            )
            for g in r.groups
        )
    )


#: ConsumerGroupDescribe v1's MemberType of a classic member (online migration).
_CLASSIC_MEMBER_TYPE = 0


def _described_member(m: Any) -> DescribedConsumerMember:
    def named(assignment: Any) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
        return tuple(
            (str(t.topic_id), t.topic_name, tuple(int(p) for p in t.partitions))
            for t in assignment.topic_partitions
        )

    return DescribedConsumerMember(
        m.member_id,
        m.instance_id,
        m.rack_id,
        int(m.member_epoch),
        m.client_id,
        m.client_host,
        tuple(m.subscribed_topic_names),
        m.subscribed_topic_regex,
        named(m.assignment),
        named(m.target_assignment),
        classic=getattr(m, "member_type", -1) == _CLASSIC_MEMBER_TYPE,
    )
