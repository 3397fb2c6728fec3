"""Who coordinates which `__consumer_offsets` partition: the seam between a node and cluster mode.

A single node owns every partition at a fixed epoch (`SingleNodeOwnership`, today's default:
no other server). In cluster mode the holder of each partition's lease owns it
(`coordinator.cluster`), and a node answers as owner only while its own lease deadline has not
passed (`may_answer`), judged when the reply is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class NodeAddress:
    """A live node as Metadata and FindCoordinator name it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class Ownership(Protocol):
    def owner_of(self, partition: int) -> NodeAddress | None:
        """The node that holds `partition` now; None while no node does (the answer is then
        COORDINATOR_NOT_AVAILABLE)."""
        ...

    def live_nodes(self) -> Sequence[NodeAddress]:
        """Every live node, this one included (Metadata's broker list)."""
        ...

    def may_answer(self, partition: int) -> bool:
        """Whether this node may send a reply as the owner of `partition` now: it holds the
        partition and its own deadline for the lease has not passed."""
        ...


class SingleNodeOwnership:
    """One node, every partition, forever: the default without `--cluster`."""

    def __init__(self, node: NodeAddress) -> None:
        self.node = node

    def owner_of(self, partition: int) -> NodeAddress | None:
        return self.node

    def live_nodes(self) -> Sequence[NodeAddress]:
        return (self.node,)

    def may_answer(self, partition: int) -> bool:
        return True
