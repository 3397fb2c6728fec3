"""Heartbeat (key 12). v1-v2: throttle time; v3: GroupInstanceId; v4: flexible."""

from __future__ import annotations

from typing import Any

from coordinator.group_apis.common import runtime
from coordinator.wire.handlers import RequestContext, ResponseValue
from rebalance.commands import Heartbeat
from rebalance.replies import HeartbeatReply

API_KEY = 12
VERSIONS = range(0, 5)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    command = Heartbeat(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        version=api_version,
    )
    reply = await runtime(ctx).submit(command)
    assert isinstance(reply, HeartbeatReply)
    return {"throttle_time": 0, "error_code": int(reply.error)}
