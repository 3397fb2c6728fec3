"""Consumer-group records through the store's encoding and last-write-wins compaction: a
partition loaded from the compacted rows is the group the live records built."""

from __future__ import annotations

from consumer_harness import Client, ConsumerHarness

from coordinator.groups import record_codec
from coordinator.groups.store.base import StoredRecord
from rebalance.classic.commands import JoinGroup
from rebalance.commands import CommitPartition, CommitTopic, DeleteGroups, OffsetCommit
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.consumer_group.records import ConsumerGroupRecord
from rebalance.core import GroupCoordinatorCore
from rebalance.records import Record
from rebalance.rng import SplitMix64

G = "g"


def compacted(records: list[Record]) -> list[Record]:
    """What the SQLite store keeps: the last row per (kind, key), in the order of last write,
    tombstones deleting their key."""
    rows: dict[tuple[str, str], tuple[int, StoredRecord]] = {}
    for seq, record in enumerate(records):
        row = record_codec.encode(record)
        if row.value is None:
            rows.pop((row.kind, row.key), None)
        else:
            rows[(row.kind, row.key)] = (seq, row)
    return [record_codec.decode(row) for _, row in sorted(rows.values(), key=lambda r: r[0])]


def view(group: ConsumerGroup) -> object:
    return (
        group.group_epoch,
        group.target_epoch,
        group.subscribed_metadata,
        group.target,
        dict(group.partition_owners),
        dict(group.offsets),
        {m.member_id: (m.current_value(), m.subscription_value()) for m in group.members.values()},
    )


def reload(h: ConsumerHarness) -> GroupCoordinatorCore:
    core = GroupCoordinatorCore(h.config, SplitMix64(7))
    core.topics_changed(h.metadata, h.clock.now_ms())
    partition = core.partition_for(G)
    core.load(partition, compacted(h.records), h.clock.now_ms())
    return core


def test_compacted_rows_load_to_the_same_group() -> None:
    h = ConsumerHarness(t=5)
    clients = [Client(h, G, f"m{i}") for i in range(3)]
    for _ in range(2):
        for c in clients:
            c.heartbeat()
    clients[1].leave()
    h.join(G, "s1", instance_id="i")
    h.set_topics(t=7)
    clients[0].heartbeat()
    clients[2].heartbeat()  # mid-reconciliation
    loaded = reload(h).group(G)
    assert isinstance(loaded, ConsumerGroup)
    assert view(loaded) == view(h.group(G))


def test_a_deleted_group_leaves_no_rows() -> None:
    h = ConsumerHarness(t=1)
    c = Client(h, G, "a")
    c.heartbeat()
    c.leave()
    h.send(DeleteGroups((G,)))
    assert compacted(h.records) == []
    assert reload(h).group(G) is None


def test_an_empty_consumer_group_turned_classic_keeps_no_consumer_rows() -> None:
    """A classic JoinGroup to an empty consumer group: the stored rows are the classic group's
    and the offsets, and they load as the classic group with its offsets."""
    h = ConsumerHarness(t=1)
    c = Client(h, G, "a")
    c.heartbeat()
    h.send(OffsetCommit(G, (CommitTopic("t", (CommitPartition(0, 9),)),), 2, "a"))
    c.leave()
    h.send(JoinGroup(G, "", "consumer", (("range", b"m"),), 10000, 10000, version=3))
    rows = compacted(h.records)
    assert not [r for r in rows if isinstance(r, ConsumerGroupRecord)]
    loaded = reload(h).group(G)
    assert loaded is not None and loaded.group_type == "classic"
    assert loaded.offsets[("t", 0)].offset == 9


def test_an_online_upgrade_and_downgrade_load_from_compacted_rows() -> None:
    """Upgrade (classic members become classic-protocol members of a consumer group, their
    JoinGroup protocols kept), a classic member rejoining with a new subscription (its
    subscription row is then written after its current-assignment row), and the downgrade:
    each loads from the compacted rows to the group the live records built."""
    from test_consumer_group_migration import Classic, classic_group

    h = ConsumerHarness(t=4, u=2)
    a, b = classic_group(h, (0, 1), (2, 3))
    c = Client(h, G, "c")
    c.heartbeat()
    a.rebalance()
    b.rebalance()
    a.topics = ("t", "u")
    a.rebalance()
    c.heartbeat()
    a.session_timeout_ms = 12_000  # its subscription row only: now after its current one
    a.rebalance()
    loaded = reload(h).group(G)
    assert isinstance(loaded, ConsumerGroup)
    assert view(loaded) == view(h.group(G))
    assert loaded.members[a.member_id].classic == h.group(G).members[a.member_id].classic
    assert isinstance(a, Classic)
    c.leave()
    rows = compacted(h.records)
    assert not [r for r in rows if isinstance(r, ConsumerGroupRecord)]
    classic = reload(h).group(G)
    assert classic is not None and classic.group_type == "classic"
    assert set(classic.members) == {a.member_id, b.member_id}
