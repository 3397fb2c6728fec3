"""Heartbeat (key 12). v1-v2: throttle time; v3: GroupInstanceId; v4: flexible.

The most frequent request a coordinator answers, and its response depends only on the version
and the error code, so each distinct body is encoded once and reused.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.codec import EncodedBody, build_response, encode_body
from rebalance.classic.commands import Heartbeat
from rebalance.errors import ErrorCode

API_KEY = 12
VERSIONS = range(0, 5)


@cache
def encoded(api_version: int, error: ErrorCode) -> EncodedBody:
    return encode_body(
        build_response(API_KEY, api_version, {"throttle_time": 0, "error_code": int(error)})
    )


def to_command(request: Any, api_version: int) -> Heartbeat:
    return Heartbeat(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        version=api_version,
    )


def answer_now(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    """The usual case, without a task: nothing is waiting to become durable."""
    reply = runtime(ctx).heartbeat_now(to_command(request, api_version))
    return None if reply is None else encoded(api_version, reply.error)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version))
    return encoded(api_version, reply.error)
