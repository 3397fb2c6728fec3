"""ConsumerGroupHeartbeat (key 68), KIP-848's one membership API. Flexible from v0.

v0: the coordinator chooses the member id on the first heartbeat; v1 (KIP-1082): the client
does, and an empty one is INVALID_REQUEST; v1 also carries SubscribedTopicRegex. librdkafka's
`group.protocol=consumer` speaks v1 only and needs it advertised (spec real-clients §4.2).
Assignments travel by topic id; the core keeps ids as strings, the wire as UUIDs.
"""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.groups.apis.common import ErrorReader, millis, runtime
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import GROUP_DENIED, group_read
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT
VERSIONS = range(0, 2)

#: READ on the group, else GROUP_AUTHORIZATION_FAILED (KafkaApis.handleConsumerGroupHeartbeat).
AUTHORIZATION = Rule(
    group_read(
        lambda r: {
            "throttle_time": 0,
            "error_code": GROUP_DENIED,
            "error_message": "Not authorized to access group",
            "member_epoch": -1,
            "heartbeat_interval": 0,
        }
    )
)


def to_command(request: Any, api_version: int, ctx: RequestContext) -> ConsumerGroupHeartbeat:
    owned = request.topic_partitions
    names = request.subscribed_topic_names
    return ConsumerGroupHeartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=millis(request.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor,
        topic_partitions=None
        if owned is None
        else tuple(
            (str(t.topic_id), tuple(int(p) for p in t.partitions))
            for t in owned
            if t.topic_id is not None
        ),
        client_id=ctx.client_id or "",
        client_host="/" + ctx.peer.rsplit(":", 1)[0],
        version=api_version,
    )


def to_response(reply: ConsumerGroupHeartbeatReply) -> dict[str, Any]:
    assignment = None
    if reply.assignment is not None:
        assignment = {
            "topic_partitions": [
                {"topic_id": uuid.UUID(topic_id), "partitions": list(partitions)}
                for topic_id, partitions in reply.assignment
            ]
        }
    return {
        "throttle_time": 0,
        "error_code": int(reply.error),
        "error_message": reply.error_message,
        "member_id": reply.member_id,
        "member_epoch": reply.member_epoch,
        "heartbeat_interval": reply.heartbeat_interval_ms,
        "assignment": assignment,
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version, ctx))
    return to_response(reply)


# -- the client's side: the core's command as this request, the response as the core's reply
COMMAND = ConsumerGroupHeartbeat


def request_values(command: ConsumerGroupHeartbeat, version: int) -> dict[str, Any]:
    owned = command.topic_partitions
    names = command.subscribed_topic_names
    return {
        "group_id": command.group_id,
        "member_id": command.member_id,
        "member_epoch": command.member_epoch,
        "instance_id": command.instance_id,
        "rack_id": command.rack_id,
        "rebalance_timeout": command.rebalance_timeout_ms,
        "subscribed_topic_names": None if names is None else list(names),
        "subscribed_topic_regex": command.subscribed_topic_regex,
        "server_assignor": command.server_assignor,
        "topic_partitions": None
        if owned is None
        else [{"topic_id": uuid.UUID(t), "partitions": list(ps)} for t, ps in owned],
    }


def reply_of(r: Any, error: ErrorReader) -> ConsumerGroupHeartbeatReply:
    assignment = None
    if r.assignment is not None:
        assignment = tuple(
            (str(t.topic_id), tuple(int(p) for p in t.partitions))
            for t in r.assignment.topic_partitions
        )
    return ConsumerGroupHeartbeatReply(
        error(r.error_code),
        r.error_message,
        r.member_id,
        int(r.member_epoch),
        millis(r.heartbeat_interval),
        assignment,
    )
