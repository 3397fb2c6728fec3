"""OffsetFetch (key 9).

Advertised from v1 (kio's floor). v2: null Topics = every committed offset, top-level
ErrorCode; v3: throttle time; v5: CommittedLeaderEpoch; v6: flexible; v7: RequireStable;
v8: several groups per request (`Groups[]`, per-group ErrorCode); v9: each group's MemberId and
MemberEpoch (KIP-848: a consumer group's member is checked, STALE_MEMBER_EPOCH). v10 (topic ids)
is not advertised: no client here uses it. aiokafka uses v3, kafka-python v8, librdkafka v9.
v0-v1 have no top-level error: a group-level error is copied into every partition.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.apis.common import runtime
from coordinator.groups.runtime import GroupRuntime
from coordinator.node.contract import RequestContext, ResponseValue
from rebalance.commands import OffsetFetch
from rebalance.errors import ErrorCode
from rebalance.replies import OffsetFetchReply

API_KEY = 9
VERSIONS = range(1, 10)


def _topics(requested: Any) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    if requested is None:
        return None
    return tuple((t.name, tuple(t.partition_indexes)) for t in requested)


def _partition(p: Any, error: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": p.partition,
        "committed_offset": p.offset,
        "committed_leader_epoch": p.leader_epoch,
        "metadata": p.metadata,
        "error_code": int(p.error if error is ErrorCode.NONE else error),
    }


def _topic_list(reply: OffsetFetchReply, fold_error: bool) -> list[dict[str, Any]]:
    error = reply.error if fold_error else ErrorCode.NONE
    return [
        {"name": topic, "partitions": [_partition(p, error) for p in found]}
        for topic, found in reply.topics
    ]


async def _fetch(
    rt: GroupRuntime,
    group_id: str,
    topics: Any,
    require_stable: bool,
    api_version: int,
    asker: Any = None,
) -> OffsetFetchReply:
    """`asker`: the v9+ group entry naming the member that fetches (None before v9)."""
    member_id = getattr(asker, "member_id", None)
    member_epoch = getattr(asker, "member_epoch", -1)
    command = OffsetFetch(
        group_id, _topics(topics), require_stable, api_version, member_id, member_epoch
    )
    return await rt.submit(command)


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    rt = runtime(ctx)
    require_stable = getattr(request, "require_stable", False)
    if api_version >= 8:
        groups = []
        for group in request.groups:
            reply = await _fetch(
                rt, group.group_id, group.topics, require_stable, api_version, group
            )
            groups.append(
                {
                    "group_id": group.group_id,
                    "topics": _topic_list(reply, fold_error=False),
                    "error_code": int(reply.error),
                }
            )
        return {"throttle_time": 0, "groups": groups}
    reply = await _fetch(rt, request.group_id, request.topics, require_stable, api_version)
    if api_version < 2:
        if reply.error is not ErrorCode.NONE and not reply.topics:
            # No top-level error field: report the error on every requested partition.
            topics = [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": -1,
                            "metadata": "",
                            "error_code": int(reply.error),
                        }
                        for p in t.partition_indexes
                    ],
                }
                for t in request.topics
            ]
            return {"topics": topics}
        return {"topics": _topic_list(reply, fold_error=True)}
    return {
        "throttle_time": 0,
        "topics": _topic_list(reply, fold_error=False),
        "error_code": int(reply.error),
    }
