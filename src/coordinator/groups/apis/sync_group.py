"""SyncGroup (key 14).

v1-v2: throttle time; v3: GroupInstanceId; v4: flexible; v5: ProtocolType and ProtocolName in
request (mandatory) and response (KIP-559). aiokafka and librdkafka use v3, kafka-python v5.
"""

from __future__ import annotations

from collections.abc import Callable
from sys import intern
from typing import Any

from coordinator.groups.apis.common import ErrorReader, runtime
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import GROUP_DENIED, group_read
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from rebalance.classic.commands import SyncGroup
from rebalance.classic.replies import SyncGroupReply

API_KEY = ApiKey.SYNC_GROUP
VERSIONS = range(0, 6)

#: READ on the group, else GROUP_AUTHORIZATION_FAILED (KafkaApis.handleSyncGroupRequest).
AUTHORIZATION = Rule(
    group_read(lambda r: {"throttle_time": 0, "error_code": GROUP_DENIED, "assignment": b""})
)


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


# -- the client's side: the core's command as this request, the response as the core's reply
COMMAND = SyncGroup


def request_values(command: SyncGroup, version: int) -> dict[str, Any]:
    return {
        "group_id": command.group_id,
        "generation_id": command.generation_id,
        "member_id": command.member_id,
        "group_instance_id": command.group_instance_id,
        "protocol_type": command.protocol_type,
        "protocol_name": command.protocol_name,
        "assignments": [{"member_id": m, "assignment": a} for m, a in command.assignments],
    }


def reply_of(r: Any, error: ErrorReader) -> SyncGroupReply:
    return SyncGroupReply(
        error(r.error_code),
        bytes(r.assignment),
        getattr(r, "protocol_type", None),
        getattr(r, "protocol_name", None),
    )
