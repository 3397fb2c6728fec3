"""What DescribeGroups, ListGroups and ClientBalanceDescribe show of a client-balance group."""

from __future__ import annotations

import json

from assignors.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from rebalance.client_balance.commands import (
    ClientBalanceDescribe,
)
from rebalance.client_balance.group import (
    GROUP_TYPE,
    ClientBalanceGroup,
    freeze,
)
from rebalance.client_balance.replies import (
    ClientBalanceDescribeReply,
    DescribedClientBalanceGroup,
    DescribedNode,
)
from rebalance.errors import ErrorCode
from rebalance.replies import DescribedGroup, DescribedMember, ListedGroup
from rebalance.state import CoordinatorState


def describe(group: ClientBalanceGroup) -> DescribedGroup:
    """DescribeGroups: the nodes as members. Each member's metadata is a ConsumerProtocol
    subscription of the group's topics whose user data is the node's
    `{"sourceCount": .., "nodeId": ..}` in JSON; its assignment is a ConsumerProtocol
    assignment of the partitions it holds, so tools that decode consumer groups can read
    both (the protocol type, "client-balance", tells them it is not one)."""
    members = tuple(
        DescribedMember(
            member_id=node.member_id,
            group_instance_id=None,
            client_id=node.client_id,
            client_host=node.client_host,
            metadata=encode_subscription(
                Subscription(node.topics, node_user_data(node.source_count, node.node_id)),
                0,
            ),
            assignment=encode_assignment(Assignment(tuple(sorted(node.held))), 0),
        )
        for node in group.nodes.values()
    )
    return DescribedGroup(
        group.group_id,
        ErrorCode.NONE,
        state=group.kafka_state,
        protocol_type=GROUP_TYPE,
        protocol_data="",
        members=members,
    )


def describe_client_balance(
    state: CoordinatorState, cmd: ClientBalanceDescribe
) -> ClientBalanceDescribeReply:
    return ClientBalanceDescribeReply(tuple(_described(state, g) for g in cmd.group_ids))


def _described(state: CoordinatorState, group_id: str) -> DescribedClientBalanceGroup:
    group = state.groups.get(group_id)
    if group is None:
        return DescribedClientBalanceGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND)
    if not isinstance(group, ClientBalanceGroup):
        return DescribedClientBalanceGroup(group_id, ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE)
    return DescribedClientBalanceGroup(
        group_id,
        ErrorCode.NONE,
        state=group.kafka_state,
        group_epoch=group.group_epoch,
        source_count=group.source_count,
        topics=group.topics,
        nodes=tuple(
            DescribedNode(
                member_id=n.member_id,
                member_epoch=n.member_epoch,
                client_id=n.client_id,
                client_host=n.client_host,
                source_count=n.source_count,
                node_id=n.node_id,
                topics=n.topics,
                held=freeze(n.held),
            )
            for n in sorted(group.nodes.values(), key=lambda n: (n.node_id, n.member_id))
        ),
    )


def listed(group: ClientBalanceGroup) -> ListedGroup:
    return ListedGroup(group.group_id, GROUP_TYPE, group.kafka_state, GROUP_TYPE)


def node_user_data(source_count: int, node_id: int) -> bytes:
    """A node's sourceCount and nodeId as DescribeGroups carries them (JSON, UTF-8)."""
    return json.dumps({"sourceCount": source_count, "nodeId": node_id}).encode()
