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

from coordinator.groups.apis.common import ErrorReader, runtime
from coordinator.groups.runtime import GroupRuntime
from coordinator.node.access_control import AccessControl
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import (
    GROUP,
    GROUP_DENIED,
    TOPIC,
    TOPIC_DENIED,
    may,
    split,
)
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation
from rebalance.commands import OffsetFetch
from rebalance.errors import ErrorCode
from rebalance.replies import FetchedOffset, OffsetFetchReply

API_KEY = ApiKey.OFFSET_FETCH
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
    return await rt.submit(_command(group_id, topics, require_stable, api_version, asker))


def _command(
    group_id: str, topics: Any, require_stable: bool, api_version: int, asker: Any = None
) -> OffsetFetch:
    member_id = getattr(asker, "member_id", None)
    member_epoch = getattr(asker, "member_epoch", -1)
    return OffsetFetch(
        group_id, _topics(topics), require_stable, api_version, member_id, member_epoch
    )


def to_command(request: Any, api_version: int) -> OffsetFetch:
    """A v0-v7 request: one group."""
    require_stable = getattr(request, "require_stable", False)
    return _command(request.group_id, request.topics, require_stable, api_version)


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
    reply = await rt.submit(to_command(request, api_version))
    return to_response(reply, request, api_version)


def to_response(reply: OffsetFetchReply, request: Any, api_version: int) -> dict[str, Any]:
    """The v0-v7 answer (one group)."""
    if api_version < 2:
        if reply.error is not ErrorCode.NONE and not reply.topics:
            # No top-level error field: report the error on every requested partition.
            return {"topics": _every_partition_failed(request.topics, int(reply.error))}
        return {"topics": _topic_list(reply, fold_error=True)}
    return {
        "throttle_time": 0,
        "topics": _topic_list(reply, fold_error=False),
        "error_code": int(reply.error),
    }


def _every_partition_failed(topics: Any, error: int) -> list[dict[str, Any]]:
    """`error` on each partition the request named (no offset)."""
    return [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": error}
                for p in t.partition_indexes
            ],
        }
        for t in topics
    ]


def _authorize(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
    """DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it; then DESCRIBE on each
    topic (`_topic_offsets`), as KafkaApis.handleOffsetFetchRequest."""
    if version < 8:
        if may(access, ctx, Operation.DESCRIBE, GROUP, request.group_id):
            return None
        topics = _every_partition_failed(request.topics or (), GROUP_DENIED)
        return {"throttle_time": 0, "error_code": GROUP_DENIED, "topics": topics}
    denied = [
        g.group_id
        for g in request.groups
        if not may(access, ctx, Operation.DESCRIBE, GROUP, g.group_id)
    ]
    if not denied:
        return None
    entries = {g: {"group_id": g, "topics": [], "error_code": GROUP_DENIED} for g in denied}
    allowed = tuple(g for g in request.groups if g.group_id not in entries)
    return split(
        request,
        "groups",
        allowed,
        "groups",
        "group_id",
        [g.group_id for g in request.groups],
        entries,
    )


def _topic_offsets(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    """Offsets of topics the client may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED when it
    named them, left out when it asked for all (reading offsets changes nothing, so the
    handler answers first and the answer is filtered)."""

    def filtered(topics: list[dict[str, Any]], named: bool) -> list[dict[str, Any]]:
        kept = []
        for topic in topics:
            if may(access, ctx, Operation.DESCRIBE, TOPIC, str(topic["name"])):
                kept.append(topic)
            elif named:
                kept.append(
                    {
                        **topic,
                        "partitions": [
                            {
                                **p,
                                "committed_offset": -1,
                                "metadata": "",
                                "error_code": TOPIC_DENIED,
                            }
                            for p in topic["partitions"]
                        ],
                    }
                )
        return kept

    if version < 8:
        return {**answer, "topics": filtered(answer.get("topics", []), request.topics is not None)}
    named = {g.group_id: g.topics is not None for g in request.groups}
    groups = [
        {**g, "topics": filtered(g.get("topics", []), named.get(g["group_id"], True))}
        for g in answer.get("groups", [])
    ]
    return {**answer, "groups": groups}


AUTHORIZATION = Rule(_authorize, _topic_offsets)

# -- the client's side: the core's command as this request, the response as the core's reply
COMMAND = OffsetFetch


def request_values(command: OffsetFetch, version: int) -> dict[str, Any]:
    """The v0-v7 form (one group, named topics)."""
    if command.topics is None:
        raise TypeError("an OffsetFetch of all topics has no wire form here")
    return {
        "group_id": command.group_id,
        "topics": [{"name": t, "partition_indexes": list(ps)} for t, ps in command.topics],
        "require_stable": command.require_stable,
    }


def reply_of(r: Any, error: ErrorReader) -> OffsetFetchReply:
    return OffsetFetchReply(
        error(getattr(r, "error_code", 0)),
        tuple(
            (
                t.name,
                tuple(
                    FetchedOffset(
                        p.partition_index,
                        p.committed_offset,
                        getattr(p, "committed_leader_epoch", -1),
                        p.metadata or "",
                        error(p.error_code),
                    )
                    for p in t.partitions
                ),
            )
            for t in r.topics
        ),
    )
