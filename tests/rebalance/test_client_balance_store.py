"""Client-balance records through the store's encoding and last-write-wins compaction: a
partition loaded from the compacted rows is the group the live records built."""

from __future__ import annotations

from client_balance_harness import ClientBalanceHarness
from test_consumer_group_store import compacted

from rebalance.client_balance.group import ClientBalanceGroup
from rebalance.client_balance.group_type import ClientBalanceGroupType
from rebalance.client_balance.records import GroupEpochValue, NodeValue
from rebalance.core import GroupCoordinatorCore
from rebalance.rng import SplitMix64


def view(group: ClientBalanceGroup) -> object:
    return (
        group.group_epoch,
        group.source_count,
        group.topics,
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


def test_an_epoch_record_without_the_source_count_takes_the_first_nodes() -> None:
    group = ClientBalanceGroup("g", 0)
    ClientBalanceGroupType.replay(group, GroupEpochValue(2))
    for member, source_count in (("a", 3), ("b", 3)):
        node = NodeValue(member, 1, source_count, 0, ("t",), "c", "/h", 10_000)
        ClientBalanceGroupType.replay(group, node)
    assert (group.source_count, group.topics) == (3, ("t",))
