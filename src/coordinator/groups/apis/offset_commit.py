"""OffsetCommit (key 8).

Advertised from v2 (kio's floor, Kafka 4.0's). v2-v4: RetentionTimeMs (explicit expiry);
v3: throttle time; v5: retention removed; v6: CommittedLeaderEpoch; v7: GroupInstanceId;
v8: flexible; v9: GROUP_ID_NOT_FOUND for a generation on an unknown group (KIP-848 era).
v10 (topic ids) is not advertised: no client here uses it. aiokafka uses v3, kafka-python v8,
librdkafka v9.

Partitions of a topic this node does not have, or with an index beyond the topic's partition
count, are answered UNKNOWN_TOPIC_OR_PARTITION and never reach the group coordinator, so nothing
is stored for them: Kafka's brokers check their metadata cache the same way before handing a
commit to the coordinator (`KafkaApis.handleOffsetCommitRequest`). The check lives here, in the
shell, because the core knows groups, not topics. When no partition is left the request is
answered at once, without the group's checks (generation, member), as Kafka answers it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from coordinator.groups.apis.common import millis, runtime, topic_partition_errors
from coordinator.node.contract import Broker, RequestContext, ResponseValue
from rebalance.commands import CommitPartition, CommitTopic, OffsetCommit
from rebalance.errors import ErrorCode
from rebalance.replies import OffsetCommitReply

API_KEY = 8
VERSIONS = range(2, 10)


def to_command(request: Any, api_version: int) -> OffsetCommit:
    retention = getattr(request, "retention_time", None)
    with_epoch = api_version >= 6  # CommittedLeaderEpoch
    return OffsetCommit(
        request.group_id,
        tuple(
            [
                CommitTopic(
                    t.name,
                    tuple(
                        [
                            CommitPartition(
                                p.partition_index,
                                p.committed_offset,
                                p.committed_leader_epoch if with_epoch else -1,
                                p.committed_metadata,
                            )
                            for p in t.partitions
                        ]
                    ),
                )
                for t in request.topics
            ]
        ),
        request.generation_id_or_member_epoch,
        request.member_id,
        getattr(request, "group_instance_id", None),
        -1 if retention is None else millis(retention),
        api_version,
    )


def known_partitions(command: OffsetCommit, broker: Broker) -> OffsetCommit:
    """`command` without the partitions of topics (or partition numbers) the node lacks
    (`command` itself when it names none of those)."""
    topics = []
    dropped = False
    for topic in command.topics:
        count = broker.partition_count(topic.name)
        kept = tuple(p for p in topic.partitions if count is not None and 0 <= p.partition < count)
        if len(kept) != len(topic.partitions):
            dropped = True
            if kept:
                topics.append(CommitTopic(topic.name, kept))
        else:
            topics.append(topic)
    return replace(command, topics=tuple(topics)) if dropped else command


def merged(command: OffsetCommit, reply: OffsetCommitReply | None) -> OffsetCommitReply:
    """One answer per requested partition, in request order: the coordinator's for the
    partitions it was given, UNKNOWN_TOPIC_OR_PARTITION for the others."""
    given = () if reply is None else reply.topics
    answered = {(topic, p): code for topic, partitions in given for p, code in partitions}
    return OffsetCommitReply(
        tuple(
            (
                t.name,
                tuple(
                    (
                        p.partition,
                        answered.get((t.name, p.partition), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                    )
                    for p in t.partitions
                ),
            )
            for t in command.topics
        )
    )


def to_response(reply: OffsetCommitReply) -> dict[str, Any]:
    return {"throttle_time": 0, "topics": topic_partition_errors(reply.topics)}


def _asked(
    request: Any, api_version: int, ctx: RequestContext
) -> tuple[OffsetCommit, OffsetCommit | None]:
    """The command as requested, and what of it goes to the coordinator (None: nothing, every
    partition is unknown to the node)."""
    command = to_command(request, api_version)
    known = known_partitions(command, ctx.broker)
    return command, (known if known.topics else None)


def _response(
    command: OffsetCommit, asked: OffsetCommit | None, reply: OffsetCommitReply | None
) -> ResponseValue:
    """The coordinator's reply as is when it was asked about every partition (the common
    case, no merge), else merged with UNKNOWN_TOPIC_OR_PARTITION for the others."""
    return to_response(reply if asked is command and reply is not None else merged(command, reply))


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    command, asked = _asked(request, api_version, ctx)
    reply = None if asked is None else await runtime(ctx).submit(asked)
    return _response(command, asked, reply)


def answer_parked(
    request: Any, api_version: int, ctx: RequestContext, answer: Callable[[ResponseValue], None]
) -> None:
    """On the wire: a slot of its connection until the commit's records are durable (the
    runtime hands the reply over after their fsync), with no task and no future."""
    command, asked = _asked(request, api_version, ctx)
    if asked is None:
        answer(_response(command, None, None))
    else:
        runtime(ctx).submit_then(asked, lambda reply: answer(_response(command, asked, reply)))
