"""An `Ownership` a test moves by hand, for the node side of cluster mode without PostgreSQL.

`Placement` is the cluster's table (which nodes live, which node holds each `__consumer_offsets`
partition); each node asks it through its own `NodeView`, as a node asks its lease manager. A
test moves a partition with `move`, and makes a node's own lease lapse without anyone else
holding it yet with `lapse` (`may_answer` false while `owner_of` still names the node: a node
frozen past its lease deadline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from coordinator.node.ownership import NodeAddress


@dataclass
class Placement:
    nodes: dict[int, NodeAddress] = field(default_factory=dict)
    #: Partition -> node id (None: no node holds it); unlisted partitions belong to `default`.
    owners: dict[int, int | None] = field(default_factory=dict)
    default: int | None = 1
    #: (node id, partition) pairs whose lease the node itself saw lapse.
    lapsed: set[tuple[int, int]] = field(default_factory=set)

    def view(self, node_id: int) -> NodeView:
        return NodeView(self, node_id)

    def add(self, node_id: int, host: str, port: int) -> None:
        self.nodes[node_id] = NodeAddress(node_id, host, port)

    def move(self, partition: int, node_id: int | None) -> None:
        self.owners[partition] = node_id
        self.lapsed = {(n, p) for n, p in self.lapsed if p != partition}

    def lapse(self, node_id: int, partition: int) -> None:
        self.lapsed.add((node_id, partition))

    def owner_id(self, partition: int) -> int | None:
        return self.owners.get(partition, self.default)


@dataclass
class NodeView:
    """One node's `Ownership` over the shared `Placement`."""

    placement: Placement
    node_id: int

    def owner_of(self, partition: int) -> NodeAddress | None:
        owner = self.placement.owner_id(partition)
        return None if owner is None else self.placement.nodes.get(owner)

    def live_nodes(self) -> Sequence[NodeAddress]:
        return list(self.placement.nodes.values())

    def may_answer(self, partition: int) -> bool:
        return (
            self.placement.owner_id(partition) == self.node_id
            and (self.node_id, partition) not in self.placement.lapsed
        )

    def owned(self, partitions: int) -> list[int]:
        return [p for p in range(partitions) if self.may_answer(p)]
