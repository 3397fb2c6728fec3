"""Writing a client-balance group's records, and replaying them: the same `replay` for live
changes and for loading. A partition held or released is a record and an event."""

from __future__ import annotations

from typing import Any

from rebalance.client_balance.group import (
    GROUP_TYPE,
    ClientBalanceGroup,
    Node,
    TopicPartition,
)
from rebalance.client_balance.records import (
    ClientBalanceRecord,
    ClientBalanceValue,
    GroupEpochValue,
    HolderValue,
    NodeValue,
    RecordKind,
    Tombstone,
    holder_key,
    parse_holder_key,
)
from rebalance.effects import Result
from rebalance.event_schema import EventType, ReleaseReason
from rebalance.records import Record
from rebalance.state import CoordinatorState


def write(
    state: CoordinatorState, result: Result, group_id: str, value: ClientBalanceValue
) -> None:
    state.apply(result, ClientBalanceRecord(group_id, value))


def replay(group: ClientBalanceGroup, value: ClientBalanceValue) -> None:
    """Apply one record value: the same code for live changes and for loading."""
    if isinstance(value, GroupEpochValue):
        group.group_epoch = max(group.group_epoch, value.epoch)
        group.fixed_source_count = value.source_count
        group.fixed_topics = value.topics
    elif isinstance(value, NodeValue):
        node = group.nodes.get(value.member_id)
        if node is None:
            node = group.add_node(value.member_id)
        node.apply(value)
    elif isinstance(value, HolderValue):
        group.hold((value.topic, value.partition), value.member_id)
    elif value.kind is RecordKind.NODE:
        group.remove_node(value.name)
    elif value.kind is RecordKind.HOLDER:
        group.free(parse_holder_key(value.name))


def tombstones(group: ClientBalanceGroup) -> list[Record]:
    """Every key the group has: holders, nodes, then the group itself."""
    records: list[Record] = [
        ClientBalanceRecord(group.group_id, Tombstone(RecordKind.HOLDER, holder_key(*tp)))
        for tp in sorted(group.holders)
    ]
    records.extend(
        ClientBalanceRecord(group.group_id, Tombstone(RecordKind.NODE, member_id))
        for member_id in sorted(group.nodes)
    )
    records.append(ClientBalanceRecord(group.group_id, None))
    return records


def hold(
    state: CoordinatorState,
    result: Result,
    group: ClientBalanceGroup,
    node: Node,
    tp: TopicPartition,
    now_ms: int,
    bootstrap: int | None,
) -> None:
    write(state, result, group.group_id, HolderValue(*tp, node.member_id, node.member_epoch))
    fields: dict[str, Any] = {"bootstrap_offset": bootstrap} if bootstrap is not None else {}
    result.event(
        EventType.PARTITION_REGISTERED,
        now_ms,
        group.group_id,
        node.member_epoch,
        node.member_id,
        group_type=GROUP_TYPE,
        topic=tp[0],
        topic_partition=tp[1],
        **fields,
    )


def release_held(
    state: CoordinatorState,
    result: Result,
    group: ClientBalanceGroup,
    node: Node,
    tp: TopicPartition,
    now_ms: int,
    reason: ReleaseReason,
) -> None:
    write(state, result, group.group_id, Tombstone(RecordKind.HOLDER, holder_key(*tp)))
    result.event(
        EventType.PARTITION_RELEASED,
        now_ms,
        group.group_id,
        node.member_epoch,
        node.member_id,
        group_type=GROUP_TYPE,
        topic=tp[0],
        topic_partition=tp[1],
        reason=reason,
    )
