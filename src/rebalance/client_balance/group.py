"""Client-balance group and node data.

`holders` maps every registered (topic, partition) to the node holding it: a partition listed
there is taken, and only its holder may commit its offsets. That map is TubeMQ's broker-side
registration table (spec §D.8) and its master-side view (§D.6) in one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rebalance.client_balance.records import NodeValue
from rebalance.client_balance.replies import HeldPartitions
from rebalance.lifecycle import GroupState, LoadedOnlyLifecycle
from rebalance.records import OffsetAndMetadata

TopicPartition = tuple[str, int]

GROUP_TYPE = "client-balance"


def freeze(partitions: Iterable[TopicPartition]) -> HeldPartitions:
    """The sorted (topic, partitions) form of a set of partitions."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return tuple((t, tuple(ps)) for t, ps in by_topic.items())


def thaw(held: HeldPartitions) -> set[TopicPartition]:
    return {(topic, p) for topic, ps in held for p in ps}


@dataclass(slots=True, eq=False)
class Node:
    """One consumer of the group (TubeMQ's `ConsumerInfo`), as registered at its join."""

    member_id: str
    member_epoch: int = 0
    source_count: int = -1
    node_id: int = -1
    topics: tuple[str, ...] = ()
    client_id: str = ""
    client_host: str = ""
    session_timeout_ms: int = 30_000
    held: set[TopicPartition] = field(default_factory=set)

    def value(self) -> NodeValue:
        return NodeValue(
            self.member_id,
            self.member_epoch,
            self.source_count,
            self.node_id,
            self.topics,
            self.client_id,
            self.client_host,
            self.session_timeout_ms,
        )

    def apply(self, value: NodeValue) -> None:
        self.member_epoch = value.member_epoch
        self.source_count = value.source_count
        self.node_id = value.node_id
        self.topics = value.topics
        self.client_id = value.client_id
        self.client_host = value.client_host
        self.session_timeout_ms = value.session_timeout_ms


class ClientBalanceGroup(LoadedOnlyLifecycle):
    """A client-balance group. `state` is the lifecycle's (loading, live); `kafka_state` is what
    ListGroups shows: Empty or Stable (there is never a rebalance to be in)."""

    group_type = GROUP_TYPE
    protocol_type = GROUP_TYPE

    __slots__ = (
        "fixed_source_count",
        "fixed_topics",
        "group_epoch",
        "group_id",
        "holders",
        "nodes",
        "offsets",
        "partition",
    )

    def __init__(self, group_id: str, partition: int) -> None:
        self.group_id = group_id
        self.partition = partition
        self.state = GroupState.DOWN
        self.group_epoch = 0
        #: The source count and topics the first node of the empty group brought; they stay
        #: until the group empties (None: from a record that predates them).
        self.fixed_source_count: int | None = None
        self.fixed_topics: tuple[str, ...] = ()
        #: Nodes in join order.
        self.nodes: dict[str, Node] = {}
        #: (topic, partition) -> the member id of the node holding it.
        self.holders: dict[TopicPartition, str] = {}
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.current_state_timestamp_ms: int | None = None

    # -- views -----------------------------------------------------------------------------
    @property
    def members(self) -> dict[str, Node]:
        """The nodes under the name the shared code (offsets, type conversion) looks for."""
        return self.nodes

    @property
    def empty(self) -> bool:
        return not self.nodes

    @property
    def kafka_state(self) -> str:
        if self.state is GroupState.DOWN:
            return "Dead"
        return "Stable" if self.nodes else "Empty"

    @property
    def source_count(self) -> int:
        """The group's source count: fixed by the first node of an empty group and kept until
        the group empties (TubeMQ's `ConsumeGroupInfo.addConsumer`, `removeConsumer` of the
        last consumer); -1 while empty."""
        if not self.nodes:
            return -1
        if self.fixed_source_count is None:
            return next(iter(self.nodes.values())).source_count
        return self.fixed_source_count

    @property
    def topics(self) -> tuple[str, ...]:
        if not self.nodes:
            return ()
        if self.fixed_source_count is None:
            return next(iter(self.nodes.values())).topics
        return self.fixed_topics

    # -- bookkeeping kept consistent with the nodes --------------------------------------
    def hold(self, tp: TopicPartition, member_id: str) -> None:
        previous = self.holders.get(tp)
        if previous is not None and previous != member_id:
            old = self.nodes.get(previous)
            if old is not None:
                old.held.discard(tp)
        self.holders[tp] = member_id
        node = self.nodes.get(member_id)
        # A compacted store may return a holder row before its node's row (the node's value
        # was rewritten later): the node collects its partitions when it appears (`add_node`).
        if node is not None:
            node.held.add(tp)

    def add_node(self, member_id: str) -> Node:
        node = self.nodes[member_id] = Node(member_id)
        node.held = {tp for tp, holder in self.holders.items() if holder == member_id}
        return node

    def free(self, tp: TopicPartition) -> None:
        member_id = self.holders.pop(tp, None)
        node = self.nodes.get(member_id) if member_id is not None else None
        if node is not None:
            node.held.discard(tp)

    def remove_node(self, member_id: str) -> None:
        node = self.nodes.pop(member_id, None)
        if node is None:
            return
        for tp in node.held:
            if self.holders.get(tp) == member_id:
                del self.holders[tp]
