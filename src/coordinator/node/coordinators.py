"""The nodes a client is told about: the coordinator of a group, and the live brokers.

Both come from the broker's `Ownership` (`coordinator.node.ownership`). This node is always named
by the advertised address of the listener the client connected to (Kafka's per-listener
`advertised.listeners`), whatever address the ownership holds for it; other nodes by theirs.
"""

from __future__ import annotations

from coordinator.node.contract import RequestContext
from coordinator.node.ownership import NodeAddress
from coordinator.partition_log.internal import GROUP_METADATA_TOPIC
from rebalance.placement import partition_for


def group_partition(ctx: RequestContext, group_id: str) -> int:
    """The `__consumer_offsets` partition of `group_id` (Kafka's `abs(hashCode) % N`, the
    core's placement), by the node's partition count of that topic (Kafka's default without
    the group coordinator)."""
    count = ctx.broker.partition_count(GROUP_METADATA_TOPIC)
    return partition_for(group_id) if count is None else partition_for(group_id, count)


def coordinator_of(ctx: RequestContext, group_id: str) -> NodeAddress | None:
    """The node coordinating `group_id` as this client must reach it; None while no node holds
    its partition (COORDINATOR_NOT_AVAILABLE)."""
    owner = ctx.broker.ownership.owner_of(group_partition(ctx, group_id))
    if owner is None:
        return None
    return as_seen(ctx, owner)


def live_brokers(ctx: RequestContext) -> list[NodeAddress]:
    """Every live node by node id, this one always among them (a client must keep a broker to
    ask, even while this node's own registration lapses)."""
    broker = ctx.broker
    nodes = {node.node_id: node for node in broker.ownership.live_nodes()}
    if broker.node_id not in nodes:
        nodes[broker.node_id] = NodeAddress(broker.node_id, broker.host, broker.port)
    return [as_seen(ctx, nodes[node_id]) for node_id in sorted(nodes)]


def controller_id(brokers: list[NodeAddress]) -> int:
    """The node Metadata and DescribeCluster name as controller: the lowest live node id."""
    return min(node.node_id for node in brokers)


def as_seen(ctx: RequestContext, node: NodeAddress) -> NodeAddress:
    """`node`, with this node's address replaced by the one this client connected to."""
    if node.node_id != ctx.broker.node_id:
        return node
    host, port = ctx.advertised_address()
    return NodeAddress(node.node_id, host, port, node.rack)
