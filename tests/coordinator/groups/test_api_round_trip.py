"""Each group API's two directions agree, through the bytes: the client's encoding of a command
(`request_values`, what the member library and the conformance run send) decodes on the server
to the same command (`to_command`), and the server's answer to a reply (`to_response`) reads
back on the client as the same reply (`reply_of`), at the versions clients send."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

import pytest

from coordinator.groups.apis import (
    GROUP_APIS,
    consumer_group_describe,
    consumer_group_heartbeat,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    offset_commit,
    offset_fetch,
    sync_group,
)
from coordinator.groups.apis.as_client import BY_COMMAND, api_key_of, reply_of, request_values
from coordinator.node.contract import RequestContext
from coordinator.wire.codec import (
    EncodedBody,
    build_request,
    build_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    read_prefix,
)
from rebalance import commands
from rebalance.classic import commands as classic
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupMember,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    SyncGroupReply,
)
from rebalance.consumer_group.commands import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import (
    ConsumerGroupDescribeReply,
    ConsumerGroupHeartbeatReply,
    DescribedConsumerGroup,
    DescribedConsumerMember,
)
from rebalance.errors import ErrorCode
from rebalance.replies import (
    DescribedGroup,
    DescribedMember,
    DescribeGroupsReply,
    FetchedOffset,
    OffsetCommitReply,
    OffsetFetchReply,
)

CLIENT_ID, PEER, HOST = "round-trip", "127.0.0.1:40000", "/127.0.0.1"
#: The server's mappings read only the client's id and address of the context.
CTX = RequestContext(cast(Any, None), 1, CLIENT_ID, PEER)
TOPIC_ID = str(uuid.UUID(int=7))


@dataclass(frozen=True)
class Case:
    module: ModuleType
    version: int
    command: Any
    reply: Any
    #: The server's answer to `reply` for the decoded request.
    answer: Callable[[Any, Any, int], Any]
    #: The server's command for the decoded request.
    decode: Callable[[Any, int], Any]


def _plain(module: ModuleType) -> Callable[[Any, int], Any]:
    return lambda request, version: module.to_command(request, version)


def _with_ctx(module: ModuleType) -> Callable[[Any, int], Any]:
    return lambda request, version: module.to_command(request, version, CTX)


CASES = [
    Case(
        join_group,
        7,
        classic.JoinGroup(
            "g", "m-1", "consumer", (("range", b"\x00\x01"),), 10_000, 30_000, "i-1",
            CLIENT_ID, HOST, None, 7,
        ),
        JoinGroupReply(
            ErrorCode.NONE, 3, "consumer", "range", "m-1", "m-1", False,
            (JoinGroupMember("m-1", "i-1", b"\x00\x01"),),
        ),
        lambda reply, request, v: join_group.to_response(reply, v),
        _with_ctx(join_group),
    ),
    Case(
        join_group,
        9,
        classic.JoinGroup(
            "g", "", "consumer", (("range", b""),), 10_000, 30_000, None, CLIENT_ID, HOST,
            "joining", 9,
        ),
        JoinGroupReply(ErrorCode.MEMBER_ID_REQUIRED, -1, None, None, "", "m-2", False, ()),
        lambda reply, request, v: join_group.to_response(reply, v),
        _with_ctx(join_group),
    ),
    Case(
        sync_group,
        5,
        classic.SyncGroup("g", 3, "m-1", (("m-1", b"\x02"),), "i-1", "consumer", "range", 5),
        SyncGroupReply(ErrorCode.NONE, b"\x02", "consumer", "range"),
        lambda reply, request, v: sync_group.to_response(reply),
        _plain(sync_group),
    ),
    Case(
        heartbeat,
        4,
        classic.Heartbeat("g", 3, "m-1", "i-1", 4),
        HeartbeatReply(ErrorCode.REBALANCE_IN_PROGRESS),
        lambda reply, request, v: heartbeat.encoded(v, reply.error),
        _plain(heartbeat),
    ),
    Case(
        leave_group,
        2,
        classic.LeaveGroup("g", (classic.LeavingMember("m-1"),), 2),
        LeaveGroupReply(ErrorCode.NONE, ()),
        lambda reply, request, v: leave_group.to_response(reply, v),
        _plain(leave_group),
    ),
    Case(
        leave_group,
        4,
        classic.LeaveGroup(
            "g", (classic.LeavingMember("m-1", "i-1"), classic.LeavingMember("m-2")), 4
        ),
        LeaveGroupReply(
            ErrorCode.NONE,
            (
                LeftMember("m-1", "i-1", ErrorCode.NONE),
                LeftMember("m-2", None, ErrorCode.UNKNOWN_MEMBER_ID),
            ),
        ),
        lambda reply, request, v: leave_group.to_response(reply, v),
        _plain(leave_group),
    ),
    Case(
        offset_commit,
        8,
        commands.OffsetCommit(
            "g",
            (commands.CommitTopic("t", (commands.CommitPartition(0, 42, 5, "meta"),)),),
            3,
            "m-1",
            "i-1",
            -1,
            8,
        ),
        OffsetCommitReply((("t", ((0, ErrorCode.NONE),)),)),
        lambda reply, request, v: offset_commit.to_response(reply),
        _plain(offset_commit),
    ),
    Case(
        offset_commit,
        9,
        commands.OffsetCommit(
            "g",
            (commands.CommitTopic("t", (commands.CommitPartition(1, 7),)),),
            4,
            "member-uuid",
            None,
            -1,
            9,
        ),
        OffsetCommitReply((("t", ((1, ErrorCode.STALE_MEMBER_EPOCH),)),)),
        lambda reply, request, v: offset_commit.to_response(reply),
        _plain(offset_commit),
    ),
    Case(
        offset_fetch,
        7,
        commands.OffsetFetch("g", (("t", (0, 1)),), True, 7),
        OffsetFetchReply(
            ErrorCode.NONE,
            (
                (
                    "t",
                    (
                        FetchedOffset(0, 42, 5, "meta"),
                        FetchedOffset(1, -1, -1, "", ErrorCode.NONE),
                    ),
                ),
            ),
        ),
        lambda reply, request, v: offset_fetch.to_response(reply, request, v),
        _plain(offset_fetch),
    ),
    Case(
        consumer_group_heartbeat,
        1,
        ConsumerGroupHeartbeat(
            "g", "member-uuid", 0, None, "rack-a", 30_000, ("t",), None, "uniform",
            ((TOPIC_ID, (0, 1)),), CLIENT_ID, HOST, 1,
        ),
        ConsumerGroupHeartbeatReply(
            ErrorCode.NONE, None, "member-uuid", 2, 5000, ((TOPIC_ID, (0, 1, 2)),)
        ),
        lambda reply, request, v: consumer_group_heartbeat.to_response(reply),
        _with_ctx(consumer_group_heartbeat),
    ),
    Case(
        describe_groups,
        5,
        commands.DescribeGroups(("g", "gone")),
        DescribeGroupsReply(
            (
                DescribedGroup(
                    "g", ErrorCode.NONE, "Stable", "consumer", "range",
                    (DescribedMember("m-1", "i-1", CLIENT_ID, HOST, b"\x00", b"\x01"),),
                ),
                DescribedGroup("gone", ErrorCode.NONE, "Dead", "", "", ()),
            )
        ),
        lambda reply, request, v: describe_groups.to_response(reply, False),
        _plain(describe_groups),
    ),
    Case(
        consumer_group_describe,
        1,
        ConsumerGroupDescribe(("g",)),
        ConsumerGroupDescribeReply(
            (
                DescribedConsumerGroup(
                    "g", ErrorCode.NONE, None, "Stable", 4, 4, "uniform",
                    (
                        DescribedConsumerMember(
                            "member-uuid", None, "rack-a", 4, CLIENT_ID, HOST, ("t",), None,
                            ((TOPIC_ID, "t", (0, 1)),), ((TOPIC_ID, "t", (0, 1)),),
                        ),
                    ),
                ),
            )
        ),
        lambda reply, request, v: consumer_group_describe.to_response(reply, False),
        _plain(consumer_group_describe),
    ),
]  # fmt: skip


def _id(case: Case) -> str:
    return f"{case.module.__name__.rsplit('.', 1)[-1]}-v{case.version}"


def _through_the_server(case: Case) -> tuple[Any, Any]:
    """The client's request as bytes, decoded by the server: (its request, its command)."""
    key, values = request_values(case.command, case.version)
    assert key == case.module.API_KEY == api_key_of(case.command)
    frame = encode_request(build_request(key, case.version, values), 1, CLIENT_ID)[4:]
    request = decode_request(frame, read_prefix(frame)).body
    return request, case.decode(request, case.version)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_command_the_client_sends_is_the_command_the_server_reads(case: Case) -> None:
    _, command = _through_the_server(case)
    assert command == case.command


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_reply_the_server_answers_is_the_reply_the_client_reads(case: Case) -> None:
    request, _ = _through_the_server(case)
    answer = case.answer(case.reply, request, case.version)
    key = case.module.API_KEY
    body = answer if isinstance(answer, EncodedBody) else build_response(key, case.version, answer)
    _, response = decode_response(encode_response(body, 5)[4:], key, case.version)
    assert reply_of(case.command, response) == case.reply


def test_every_group_api_a_client_sends_has_a_round_trip_here() -> None:
    sent = {m for m in GROUP_APIS if hasattr(m, "COMMAND")}
    assert sent == set(BY_COMMAND.values()) == {case.module for case in CASES}
