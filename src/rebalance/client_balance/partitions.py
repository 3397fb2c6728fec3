"""RegisterPartitions and ReleasePartitions: a partition is held by one node at a time, and a
registration may bring the offset consumption starts from."""

from __future__ import annotations

from collections.abc import Hashable

from rebalance.client_balance.commands import (
    PartitionRequest,
    RegisterPartitions,
    ReleasePartitions,
)
from rebalance.client_balance.group import (
    Node,
    TopicPartition,
)
from rebalance.client_balance.membership import acting_node
from rebalance.client_balance.replay import hold, release_held
from rebalance.client_balance.replies import (
    RegisteredPartition,
    RegisterPartitionsReply,
    ReleasedPartition,
    ReleasePartitionsReply,
)
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import ReleaseReason
from rebalance.records import OffsetAndMetadata, OffsetCommitRecord
from rebalance.state import CoordinatorState
from rebalance.topics import TopicMetadata


def register(
    state: CoordinatorState,
    metadata: TopicMetadata,
    cmd: RegisterPartitions,
    now_ms: int,
    token: Hashable,
) -> Result:
    result = Result()
    try:
        group, node = acting_node(
            state, result, cmd.group_id, cmd.member_id, cmd.member_epoch, now_ms
        )
    except CoordinatorError as exc:
        result.reply(token, cmd.error_reply(exc.code))
        return result
    outcomes = []
    for request in cmd.partitions:
        tp = (request.topic, request.partition)
        error = _partition_error(metadata, node, tp)
        holder = group.holders.get(tp)
        if error is None and holder is not None and holder != node.member_id:
            outcomes.append(RegisteredPartition(*tp, ErrorCode.PARTITION_OCCUPIED, holder=holder))
            continue
        if error is not None:
            outcomes.append(RegisteredPartition(*tp, error))
            continue
        bootstrap = bootstrap_offset(request)
        if holder is None:
            hold(state, result, group, node, tp, now_ms, bootstrap)
        if bootstrap is not None:
            state.apply(
                result,
                OffsetCommitRecord(
                    group.group_id, *tp, OffsetAndMetadata(bootstrap, -1, "", now_ms)
                ),
            )
        stored = group.offsets.get(tp)
        outcomes.append(RegisteredPartition(*tp, ErrorCode.NONE, stored.offset if stored else -1))
    result.reply(token, RegisterPartitionsReply(ErrorCode.NONE, tuple(outcomes)))
    return result


def release(
    state: CoordinatorState, cmd: ReleasePartitions, now_ms: int, token: Hashable
) -> Result:
    result = Result()
    try:
        group, node = acting_node(
            state, result, cmd.group_id, cmd.member_id, cmd.member_epoch, now_ms
        )
    except CoordinatorError as exc:
        result.reply(token, cmd.error_reply(exc.code))
        return result
    outcomes = []
    for request in cmd.partitions:
        tp = (request.topic, request.partition)
        holder = group.holders.get(tp)
        if holder == node.member_id:
            release_held(state, result, group, node, tp, now_ms, ReleaseReason.RELEASE)
            outcomes.append(ReleasedPartition(*tp, ErrorCode.NONE))
        elif holder is not None:  # TubeMQ's broker: "has been consumed by" another
            outcomes.append(ReleasedPartition(*tp, ErrorCode.DUPLICATE_PARTITION))
        else:  # TubeMQ's broker: unregistered ("you have to register firstly"); a retry
            outcomes.append(ReleasedPartition(*tp, ErrorCode.HB_NO_NODE))
    result.reply(token, ReleasePartitionsReply(ErrorCode.NONE, tuple(outcomes)))
    return result


def _partition_error(metadata: TopicMetadata, node: Node, tp: TopicPartition) -> ErrorCode | None:
    topic, partition = tp
    info = metadata.topics.get(topic)
    if topic not in node.topics or info is None or not 0 <= partition < info.partitions:
        return ErrorCode.NOT_FOUND  # not in the node's partition metadata, as TubeMQ's
    return None


def bootstrap_offset(request: PartitionRequest) -> int | None:
    """The offset a registration starts from: None keeps the committed one (< 0); else the
    requested offset within the partition's log range when known (TubeMQ's `MixedUtils.mid`:
    beyond the log end starts at the end, below the start at the start)."""
    if request.bootstrap_offset < 0:
        return None
    if request.log_range is None:
        return request.bootstrap_offset
    start, end = request.log_range
    return max(start, min(end, request.bootstrap_offset))
