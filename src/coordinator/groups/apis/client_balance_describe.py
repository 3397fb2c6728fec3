"""ClientBalanceDescribe (extension key 10003, v0): each node of client-balance groups with its
source count, node id and held partitions (TubeMQ's `admin_query_consume_group_detail`).
GROUP_ID_NOT_FOUND for an unknown group, CLIENT_INCONSISTENT_CONSUMETYPE (424) for a group of
another type, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS as for the other group APIs."""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.client_balance_heartbeat import held_to_wire
from coordinator.groups.apis.common import runtime
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire import client_balance_schema as schema
from rebalance.client_balance.commands import ClientBalanceDescribe
from rebalance.client_balance.replies import ClientBalanceDescribeReply

API_KEY = schema.DESCRIBE_KEY
VERSIONS = range(0, 1)
SCHEMAS = schema.SCHEMAS[API_KEY]


def to_response(reply: ClientBalanceDescribeReply) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "groups": [
            {
                "group_id": g.group_id,
                "error_code": int(g.error),
                "state": g.state,
                "group_epoch": g.group_epoch,
                "source_count": g.source_count,
                "topics": list(g.topics),
                "nodes": [
                    {
                        "member_id": n.member_id,
                        "member_epoch": n.member_epoch,
                        "client_id": n.client_id,
                        "client_host": n.client_host,
                        "source_count": n.source_count,
                        "node_id": n.node_id,
                        "topics": list(n.topics),
                        "held": held_to_wire(n.held),
                    }
                    for n in g.nodes
                ],
            }
            for g in reply.groups
        ],
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    reply = await runtime(ctx).submit(ClientBalanceDescribe(tuple(request.group_ids)))
    return to_response(reply)
