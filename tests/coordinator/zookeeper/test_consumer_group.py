"""ZooKeeper-coordinated consumers in separate processes, against a real ZooKeeper and broker:
they split a topic with no partition owned twice, take over from a killed one once its session
expires, and resume from the offsets they committed to ZooKeeper."""

from __future__ import annotations

from pathlib import Path

from zk_cluster import Member, eventually, owners, produce, zk_broker

from coordinator.zookeeper.client import ZooKeeper

TOPIC, PARTITIONS, GROUP = "orders", 12, "billing"


def consumed(members: list[Member]) -> set[str]:
    return {r[3] for m in members for r in m.records}


async def settled(zk: ZooKeeper, members: list[Member]) -> bool:
    """Every member has rebalanced, every partition is assigned exactly once among their
    latest reports, and the owner znodes say the same."""
    claimed = [tp for m in members for tp in m.partitions]
    if not all(m.rebalances for m in members):
        return False
    if sorted(claimed) != [(TOPIC, p) for p in range(PARTITIONS)]:
        return False
    reported = {p: f"{m.consumer_id}-0" for m in members for _, p in m.partitions}
    return await owners(zk, GROUP, TOPIC) == reported


async def test_processes_split_the_topic_and_take_over_from_a_killed_one(
    zookeeper_connect: str, zk: ZooKeeper
) -> None:
    async with zk_broker(zookeeper_connect, [(TOPIC, PARTITIONS)]) as node:
        await produce(node, TOPIC, PARTITIONS, 120)
        members = [await Member.start(zookeeper_connect, GROUP, name, "--topic", TOPIC)
                   for name in ("a", "b", "c")]  # fmt: skip
        try:
            # Settled: the members' reports cover the topic and ZooKeeper agrees, one owner
            # znode per partition holding the thread id of the member that reported it.
            await eventually(lambda: settled(zk, members), detail=lambda: members)
            # Range over sorted thread ids: billing_a-0, billing_b-0, billing_c-0 get 4 each.
            assert [m.partitions for m in members] == [
                [(TOPIC, p) for p in range(i * 4, i * 4 + 4)] for i in range(3)
            ]
            await members[1].kill()  # no clean shutdown: its znodes live until its session expires
            survivors = [members[0], members[2]]
            await eventually(lambda: settled(zk, survivors), detail=lambda: members)
            await produce(node, TOPIC, PARTITIONS, 24, start=120)
            everything = {f"{TOPIC}-{i}" for i in range(144)}
            # Offsets are committed before partitions are released, so whoever takes a partition
            # over resumes where its owner stopped; what b consumed after its last commit is
            # consumed again (at least once, as in 0.8).
            await eventually(lambda: consumed(members) == everything, detail=lambda: members)
        finally:
            for m in members:
                await m.stop()


async def test_offsets_survive_restarts(
    zookeeper_connect: str, zk: ZooKeeper, tmp_path: Path
) -> None:
    async with zk_broker(zookeeper_connect, [(TOPIC, 4)]) as node:
        await produce(node, TOPIC, 4, 40)
        first = await Member.start(zookeeper_connect, GROUP, "a", "--topic", TOPIC)
        await eventually(lambda: first.consumed == 40)
        assert await first.stop() == 0  # commits at shutdown
        for p in range(4):
            data, _ = await zk.get(f"/consumers/{GROUP}/offsets/{TOPIC}/{p}")
            assert data == b"10"
        await produce(node, TOPIC, 4, 8, start=40)
        second = await Member.start(zookeeper_connect, GROUP, "a", "--topic", TOPIC)
        try:
            await eventually(lambda: second.consumed == 8)
            assert sorted(r[3] for r in second.records) == sorted(
                f"{TOPIC}-{i}" for i in range(40, 48)
            )
        finally:
            await second.stop()
