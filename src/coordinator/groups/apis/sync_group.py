"""SyncGroup (key 14).

v1-v2: throttle time; v3: GroupInstanceId; v4: flexible; v5: ProtocolType and ProtocolName in
request (mandatory) and response (KIP-559). aiokafka and librdkafka use v3, kafka-python v5.
"""

from __future__ import annotations

from collections.abc import Callable
from sys import intern
from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.classic.commands import SyncGroup
from rebalance.classic.replies import SyncGroupReply

API_KEY = 14
VERSIONS = range(0, 6)


def to_command(request: Any, api_version: int) -> SyncGroup:
    assignments = request.assignments
    # (Positional, as JoinGroup's: built for every SyncGroup.)
    return SyncGroup(
        intern(request.group_id),  # (as JoinGroup's: shared by the group's members)
        request.generation_id,
        request.member_id,
        tuple([(a.member_id, a.assignment) for a in assignments]) if assignments else (),
        getattr(request, "group_instance_id", None),
        getattr(request, "protocol_type", None),
        getattr(request, "protocol_name", None),
        api_version,
    )


def to_response(reply: SyncGroupReply) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": int(reply.error),
        "protocol_type": reply.protocol_type,
        "protocol_name": reply.protocol_name,
        "assignment": reply.assignment,
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version))
    return to_response(reply)


def answer_parked(
    request: Any, api_version: int, ctx: RequestContext, answer: Callable[[ResponseValue], None]
) -> None:
    """On the wire: parked as a slot of its connection until the round answers it."""

    def deliver(reply: SyncGroupReply) -> None:
        answer(to_response(reply))

    runtime(ctx).submit_then(to_command(request, api_version), deliver)
