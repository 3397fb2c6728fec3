"""Client-balance records through the store's encoding and last-write-wins compaction: a
partition loaded from the compacted rows is the group the live records built."""

from __future__ import annotations

from client_balance_harness import ClientBalanceHarness
from test_consumer_group_store import compacted

from rebalance.client_balance.group import ClientBalanceGroup
from rebalance.core import GroupCoordinatorCore
from rebalance.rng import SplitMix64


def view(group: ClientBalanceGroup) -> object:
    return (
        group.group_epoch,
        dict(group.holders),
        dict(group.offsets),
        {m: (n.value(), sorted(n.held)) for m, n in group.nodes.items()},
    )


def test_compacted_rows_load_to_the_same_group() -> None:
    h = ClientBalanceHarness(t=6)
    h.commit("g", {("t", 5): 1})  # a simple group first, taken over by the first node
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0), ("t", 3, 40))
    h.register("b", ("t", 1))
    h.join_node("a", 3, 0, session_timeout_ms=20_000)  # a's row rewritten after its holders
    h.release("b", ("t", 1))
    h.register("b", ("t", 4), ("t", 1))
    h.join_node("c", 3, 2)
    h.leave_node("c")
    core = GroupCoordinatorCore(h.config, SplitMix64(7))
    core.topics_changed(h.metadata, h.clock.now_ms())
    core.load(core.partition_for("g"), compacted(h.records), h.clock.now_ms())
    loaded = core.group("g")
    assert isinstance(loaded, ClientBalanceGroup)
    assert view(loaded) == view(h.group())
    assert loaded.holders == {("t", 0): "a", ("t", 3): "a", ("t", 4): "b", ("t", 1): "b"}
