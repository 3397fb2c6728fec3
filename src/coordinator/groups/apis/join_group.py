"""JoinGroup (key 11).

v0: no rebalance timeout (the session timeout is used); v1: RebalanceTimeoutMs; v2-v3:
throttle time; v4: MEMBER_ID_REQUIRED two-step join (KIP-394); v5: GroupInstanceId (KIP-345);
v6: flexible; v7: response ProtocolType and nullable ProtocolName (KIP-559); v8: Reason
(KIP-800); v9: response SkipAssignment (KIP-814). aiokafka uses v5, kafka-python v7,
librdkafka v5.
"""

from __future__ import annotations

from collections.abc import Callable
from sys import intern
from typing import Any

from coordinator.groups.apis.common import millis, name_for_version, runtime
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.classic.commands import JoinGroup
from rebalance.classic.replies import JoinGroupReply

API_KEY = 11
VERSIONS = range(0, 10)


def to_command(request: Any, api_version: int, ctx: RequestContext) -> JoinGroup:
    # The names every member of a group repeats are interned: a member's state keeps them, and
    # a thousand members then share one copy of each (~0.2 KB a member).
    session = millis(request.session_timeout)
    # (Positional: built for every JoinGroup, keywords cost a quarter more.)
    return JoinGroup(
        intern(request.group_id),
        request.member_id,
        intern(request.protocol_type),
        tuple([(intern(p.name), p.metadata) for p in request.protocols]),
        session,  # session_timeout_ms
        millis(getattr(request, "rebalance_timeout", session)),  # (v0 has none)
        getattr(request, "group_instance_id", None),
        intern(ctx.client_id or ""),
        _client_host(ctx),  # (interned)
        getattr(request, "reason", None),
        api_version,
    )


def _client_host(ctx: RequestContext) -> str:
    """Kafka's "/address" of the client (the session knows the address without the port)."""
    host = ctx.session.client_host if ctx.session is not None else ctx.peer.rsplit(":", 1)[0]
    slashed = _SLASHED.get(host)
    if slashed is None:
        slashed = intern("/" + host)
        if len(_SLASHED) < _SLASHED_MAX:
            _SLASHED[host] = slashed
    return slashed


#: Client addresses already written as Kafka's "/address", each kept once (interned): a group's
#: members mostly come from a few hosts. Bounded: past `_SLASHED_MAX`, no more are kept.
_SLASHED: dict[str, str] = {}
_SLASHED_MAX = 4096


def to_response(reply: JoinGroupReply, api_version: int) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": int(reply.error),
        "generation_id": reply.generation_id,
        "protocol_type": reply.protocol_type,
        "protocol_name": name_for_version(reply.protocol_name, nullable=api_version >= 7),
        "leader": reply.leader,
        "skip_assignment": reply.skip_assignment,
        "member_id": reply.member_id,
        # (Only the leader's answer has members: the others skip the comprehension's call.)
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata,
            }
            for m in reply.members
        ]
        if reply.members
        else [],
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, api_version, ctx))
    return to_response(reply, api_version)


def answer_parked(
    request: Any, api_version: int, ctx: RequestContext, answer: Callable[[ResponseValue], None]
) -> None:
    """On the wire: parked as a slot of its connection until the round answers it."""

    def deliver(reply: JoinGroupReply) -> None:
        answer(to_response(reply, api_version))

    runtime(ctx).submit_then(to_command(request, api_version, ctx), deliver)
