"""The node a request comes from, and nodes leaving: after the group's stale holders are gone
(a request is decided against live nodes only), and with their partitions freed."""

from __future__ import annotations

from rebalance.client_balance.group import (
    GROUP_TYPE,
    ClientBalanceGroup,
    Node,
)
from rebalance.client_balance.records import (
    RecordKind,
    Tombstone,
)
from rebalance.client_balance.replay import release_held, write
from rebalance.client_balance.timers import client_balance_session_key
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import EventType, ExpiryReason, LeaveReason, ReleaseReason
from rebalance.state import CoordinatorState


def own_group(state: CoordinatorState, group_id: str) -> ClientBalanceGroup:
    group = state.groups.get(group_id)
    if not isinstance(group, ClientBalanceGroup):
        if group is not None and not group.empty:
            raise CoordinatorError(
                ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE,
                f"group {group_id} is a {group.group_type} group",
            )
        raise CoordinatorError(ErrorCode.HB_NO_NODE, f"group {group_id} has no nodes")
    return group


def acting_node(
    state: CoordinatorState,
    result: Result,
    group_id: str,
    member_id: str,
    member_epoch: int,
    now_ms: int,
) -> tuple[ClientBalanceGroup, Node]:
    """The group and the node a request comes from, after the group's stale holders are
    gone (a request is decided against live nodes only); CoordinatorError otherwise."""
    group = own_group(state, group_id)
    expire_stale(state, result, group, now_ms)
    return group, node_of(group, member_id, member_epoch)


def node_of(group: ClientBalanceGroup, member_id: str, member_epoch: int) -> Node:
    node = group.nodes.get(member_id)
    if node is None or node.member_epoch != member_epoch:
        raise CoordinatorError(
            ErrorCode.HB_NO_NODE,
            f"{member_id} (epoch {member_epoch}) is not a node of {group.group_id}",
        )
    return node


def expire_stale(
    state: CoordinatorState, result: Result, group: ClientBalanceGroup, now_ms: int
) -> None:
    """Remove the nodes whose session deadline has passed, fired or not."""
    for node in list(group.nodes.values()):
        key = client_balance_session_key(group.group_id, node.member_id)
        deadline = state.timers.get(key)
        if deadline is not None and deadline <= now_ms:
            remove(state, result, group, node, now_ms, ExpiryReason.SESSION_TIMEOUT)


def remove(
    state: CoordinatorState,
    result: Result,
    group: ClientBalanceGroup,
    node: Node,
    now_ms: int,
    expiry: ExpiryReason | None,
) -> None:
    reason = ReleaseReason.LEFT if expiry is None else ReleaseReason.EXPIRED
    for tp in sorted(node.held):
        release_held(state, result, group, node, tp, now_ms, reason)
    write(state, result, group.group_id, Tombstone(RecordKind.NODE, node.member_id))
    state.cancel(result, client_balance_session_key(group.group_id, node.member_id))
    if expiry is None:
        result.event(
            EventType.MEMBER_LEFT,
            now_ms,
            group.group_id,
            node.member_epoch,
            node.member_id,
            group_type=GROUP_TYPE,
            reason=LeaveReason.LEAVE,
        )
    else:
        result.event(
            EventType.MEMBER_EXPIRED,
            now_ms,
            group.group_id,
            node.member_epoch,
            node.member_id,
            group_type=GROUP_TYPE,
            reason=expiry,
            session_timeout_ms=node.session_timeout_ms,
        )
