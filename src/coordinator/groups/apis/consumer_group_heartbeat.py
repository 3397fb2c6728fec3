"""ConsumerGroupHeartbeat (key 68), KIP-848's one membership API. Flexible from v0.

v0: the coordinator chooses the member id on the first heartbeat; v1 (KIP-1082): the client
does, and an empty one is INVALID_REQUEST; v1 also carries SubscribedTopicRegex. librdkafka's
`group.protocol=consumer` speaks v1 only and needs it advertised (spec real-clients §4.2).
Assignments travel by topic id; the core keeps ids as strings, the wire as UUIDs.
"""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.groups.apis.common import millis, runtime
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply

API_KEY = 68
VERSIONS = range(0, 2)


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
