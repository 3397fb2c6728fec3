"""`ClientBalanceHeartbeat`: a node joins (epoch 0), leaves (-1) or proves it is alive, and
hears what the coordinator records it as holding."""

from __future__ import annotations

from collections.abc import Hashable

from rebalance.client_balance.commands import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    ClientBalanceHeartbeat,
)
from rebalance.client_balance.group import (
    GROUP_TYPE,
    ClientBalanceGroup,
    Node,
    freeze,
)
from rebalance.client_balance.membership import acting_node, expire_stale, own_group, remove
from rebalance.client_balance.records import (
    GroupEpochValue,
    NodeValue,
)
from rebalance.client_balance.replay import write
from rebalance.client_balance.replies import (
    ClientBalanceHeartbeatReply,
)
from rebalance.client_balance.timers import client_balance_session_key
from rebalance.effects import Result, single_reply
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import EventType
from rebalance.state import CoordinatorState

#: How often a node is asked to heartbeat: a third of its session, as Kafka's clients default.
HEARTBEAT_FRACTION = 3


def heartbeat(
    state: CoordinatorState, cmd: ClientBalanceHeartbeat, now_ms: int, token: Hashable
) -> Result:
    result = Result()
    try:
        if not cmd.member_id:
            raise CoordinatorError(ErrorCode.BAD_REQUEST, "the member id must not be empty")
        if cmd.member_epoch == JOIN_EPOCH:
            reply = _join(state, result, cmd, now_ms)
        elif cmd.member_epoch == LEAVE_EPOCH:
            reply = _leave(state, result, cmd, now_ms)
        else:
            reply = _heartbeat(state, result, cmd, now_ms)
    except CoordinatorError as exc:
        return single_reply(token, ClientBalanceHeartbeatReply(exc.code, exc.message or None))
    result.reply(token, reply)
    return result


def _join(
    state: CoordinatorState, result: Result, cmd: ClientBalanceHeartbeat, now_ms: int
) -> ClientBalanceHeartbeatReply:
    cfg = state.config
    if (
        not cfg.group_min_session_timeout_ms
        <= cmd.session_timeout_ms
        <= (cfg.group_max_session_timeout_ms)
    ):
        raise CoordinatorError(
            ErrorCode.INVALID_SESSION_TIMEOUT,
            f"session timeout {cmd.session_timeout_ms} ms outside "
            f"[{cfg.group_min_session_timeout_ms}, {cfg.group_max_session_timeout_ms}]",
        )
    if not cmd.topics:
        raise CoordinatorError(ErrorCode.BAD_REQUEST, "a node subscribes at least one topic")
    if cmd.source_count > 0 and not 0 <= cmd.node_id < cmd.source_count:
        # TubeMQ's client checks this in start() and its master again at registration.
        raise CoordinatorError(
            ErrorCode.BAD_REQUEST,
            f"nodeId {cmd.node_id} outside [0, {cmd.source_count - 1}] "
            f"(sourceCount {cmd.source_count})",
        )
    group = _group_for_join(state, result, cmd)
    expire_stale(state, result, group, now_ms)
    topics = tuple(sorted(set(cmd.topics)))
    _check_consistent(group, cmd, topics)
    node = group.nodes.get(cmd.member_id)
    if node is None:
        epoch = group.group_epoch + 1
        if group.nodes:
            fixed = GroupEpochValue(epoch, group.source_count, group.topics)
        else:  # the first node of an empty group fixes them until the group empties
            fixed = GroupEpochValue(epoch, cmd.source_count, topics)
        write(state, result, group.group_id, fixed)
    else:
        epoch = node.member_epoch  # a re-join keeps its incarnation and partitions
    value = NodeValue(
        cmd.member_id,
        epoch,
        cmd.source_count,
        cmd.node_id,
        topics,
        cmd.client_id,
        cmd.client_host,
        cmd.session_timeout_ms,
    )
    if node is None or node.value() != value:
        write(state, result, group.group_id, value)
    if node is None:
        result.event(
            EventType.MEMBER_JOINED,
            now_ms,
            group.group_id,
            epoch,
            cmd.member_id,
            group_type=GROUP_TYPE,
            client_id=cmd.client_id,
            instance_id=None,
            protocols=[],
            source_count=cmd.source_count,
            node_id=cmd.node_id,
        )
    return _alive(state, result, group, group.nodes[cmd.member_id], now_ms)


def _group_for_join(
    state: CoordinatorState, result: Result, cmd: ClientBalanceHeartbeat
) -> ClientBalanceGroup:
    group = state.groups.get(cmd.group_id)
    if isinstance(group, ClientBalanceGroup):
        return group
    if group is not None:
        if not (group.empty and group.group_type == "classic"):
            # An empty consumer group is refused too: its keyed rows (target epoch) would
            # outlive a takeover in the store.
            raise CoordinatorError(
                ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE,
                f"group {cmd.group_id} is a {group.group_type} group"
                + (" with members" if not group.empty else ""),
            )
        # An empty classic group (offsets only, say) becomes a client-balance group, its
        # offsets kept: our record converts it, then its tombstone clears its row (a
        # type's tombstone deletes only a group of its own type).
        write(state, result, cmd.group_id, GroupEpochValue(0))
        for record in state.type_of(group).tombstones(group):
            state.apply(result, record)
    else:
        write(state, result, cmd.group_id, GroupEpochValue(0))
    created = state.groups[cmd.group_id]
    assert isinstance(created, ClientBalanceGroup)
    return created


def _check_consistent(
    group: ClientBalanceGroup, cmd: ClientBalanceHeartbeat, topics: tuple[str, ...]
) -> None:
    """TubeMQ's `ConsumeGroupInfo.validConsumerInfo`: against the group's topics and source
    count (a re-join of a node is checked too), the node id against the other nodes."""
    if not group.nodes:
        return  # the first node fixes the group's topics and source count
    if topics != group.topics:
        raise CoordinatorError(
            ErrorCode.CLIENT_INCONSISTENT_TOPICSET,
            f"topics {list(topics)} differ from the group's {list(group.topics)}",
        )
    if group.source_count <= 0:
        return  # the group turned the sourceCount/nodeId checks off
    if cmd.source_count != group.source_count:
        raise CoordinatorError(
            ErrorCode.CLIENT_INCONSISTENT_SOURCECOUNT,
            f"sourceCount {cmd.source_count} differs from the group's {group.source_count}",
        )
    for other in group.nodes.values():
        if other.member_id != cmd.member_id and other.node_id == cmd.node_id:
            raise CoordinatorError(
                ErrorCode.CLIENT_DUPLICATE_INDEXID,
                f"nodeId {cmd.node_id} is held by {other.member_id}",
            )


def _leave(
    state: CoordinatorState, result: Result, cmd: ClientBalanceHeartbeat, now_ms: int
) -> ClientBalanceHeartbeatReply:
    group = own_group(state, cmd.group_id)
    expire_stale(state, result, group, now_ms)
    node = group.nodes.get(cmd.member_id)
    if node is None:
        raise CoordinatorError(
            ErrorCode.HB_NO_NODE, f"{cmd.member_id} is not a node of {cmd.group_id}"
        )
    remove(state, result, group, node, now_ms, None)
    return ClientBalanceHeartbeatReply(ErrorCode.NONE, member_epoch=LEAVE_EPOCH)


def _heartbeat(
    state: CoordinatorState, result: Result, cmd: ClientBalanceHeartbeat, now_ms: int
) -> ClientBalanceHeartbeatReply:
    # `cmd.held` is the node's report: never applied (its snapshot may predate a
    # registration answered meanwhile); the reply's book is what the node syncs to.
    group, node = acting_node(state, result, cmd.group_id, cmd.member_id, cmd.member_epoch, now_ms)
    return _alive(state, result, group, node, now_ms)


def _alive(
    state: CoordinatorState, result: Result, group: ClientBalanceGroup, node: Node, now_ms: int
) -> ClientBalanceHeartbeatReply:
    state.schedule(
        result,
        client_balance_session_key(group.group_id, node.member_id),
        now_ms + node.session_timeout_ms,
    )
    return ClientBalanceHeartbeatReply(
        ErrorCode.NONE,
        member_epoch=node.member_epoch,
        heartbeat_interval_ms=max(1, node.session_timeout_ms // HEARTBEAT_FRACTION),
        source_count=group.source_count,
        held=freeze(node.held),
    )
