"""ClientBalanceHeartbeat (extension key 10000, v0): a client-balance node joins (epoch 0),
heartbeats with the partitions it holds, or leaves (epoch -1). TubeMQ's master register,
heartbeat and close in one request, shaped like KIP-848's ConsumerGroupHeartbeat.
docs/client-balance.md describes the fields and the error codes."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire import client_balance_schema as schema
from rebalance.client_balance.commands import ClientBalanceHeartbeat
from rebalance.client_balance.replies import ClientBalanceHeartbeatReply, HeldPartitions

API_KEY = schema.HEARTBEAT_KEY
VERSIONS = range(0, 1)
SCHEMAS = schema.SCHEMAS[API_KEY]


def held_to_wire(held: HeldPartitions) -> list[dict[str, Any]]:
    return [{"topic": topic, "partitions": list(partitions)} for topic, partitions in held]


def to_command(request: Any, ctx: RequestContext) -> ClientBalanceHeartbeat:
    held = request.held
    return ClientBalanceHeartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=int(request.member_epoch),
        source_count=int(request.source_count),
        node_id=int(request.node_id),
        topics=tuple(request.topics or ()),
        session_timeout_ms=int(request.session_timeout_ms),
        client_id=ctx.client_id or "",
        client_host="/" + ctx.peer.rsplit(":", 1)[0],
        held=None
        if held is None
        else tuple((t.topic, tuple(sorted(int(p) for p in t.partitions))) for t in held),
    )


def to_response(reply: ClientBalanceHeartbeatReply) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(reply.error),
        "error_message": reply.error_message,
        "member_epoch": reply.member_epoch,
        "heartbeat_interval_ms": reply.heartbeat_interval_ms,
        "source_count": reply.source_count,
        "held": held_to_wire(reply.held),
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(to_command(request, ctx))
    return to_response(reply)
