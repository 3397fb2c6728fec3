"""The cluster's topic catalogue on a real PostgreSQL, two nodes' catalogues in one process: a
change decided on one reaches the other's store with the same topic id (by NOTIFY, and by
polling when the notification is lost); of two creates of one name at once exactly one wins;
a change the other node's view still allows but the catalogue no longer does is refused as
Kafka refuses it; a node's own topics join the catalogue, and its strays go."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psycopg
import pytest

from coordinator.cluster.schema import MIGRATIONS, SCHEMA_VERSION
from coordinator.cluster.topic_catalogue import TopicCatalogue
from coordinator.node.topic_admin import (
    PartitionCountError,
    TopicCollisionError,
    TopicExistsError,
    UnknownTopicError,
)
from coordinator.partition_log.topics import TopicStore


async def until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.02)


class Nodes:
    """Catalogues of nodes (each its own data dir) on one database, closed at the end."""

    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root
        self.opened: list[tuple[TopicCatalogue, TopicStore]] = []
        self.deleted: dict[int, list[str]] = {}

    def store(self, node_id: int) -> TopicStore:
        return TopicStore(self.root / f"node-{node_id}")

    async def start(
        self, node_id: int, *, poll_s: float = 0.1, store: TopicStore | None = None
    ) -> tuple[TopicCatalogue, TopicStore]:
        store = store or self.store(node_id)
        announced = self.deleted.setdefault(node_id, [])

        async def forget(names: list[str]) -> None:
            announced.extend(names)

        store.on_deleted(forget)
        catalogue = TopicCatalogue(self.url, store, poll_s=poll_s, node_id=node_id)
        await catalogue.start()
        self.opened.append((catalogue, store))
        return catalogue, store

    async def close(self) -> None:
        for catalogue, store in self.opened:
            await catalogue.close()
            store.close()


@pytest.fixture
async def nodes(postgresql_database: str, tmp_path: Path) -> AsyncIterator[Nodes]:
    made = Nodes(postgresql_database, tmp_path)
    yield made
    await made.close()


async def test_a_topic_created_on_one_node_reaches_the_other_at_once_with_its_id(
    nodes: Nodes,
) -> None:
    # A poll far longer than the wait: only the notification can bring it in time.
    one, _ = await nodes.start(1, poll_s=600)
    _, store_two = await nodes.start(2, poll_s=600)
    made = await one.create("payments", 3, {"retention.ms": "1000"}, new=True)
    await until(lambda: store_two.get("payments") is not None)
    seen = store_two.get("payments")
    assert seen is not None
    assert (seen.topic_id, len(seen.partitions), seen.configs) == (
        made.topic_id, 3, {"retention.ms": "1000"},
    )  # fmt: skip
    assert seen.partitions[0].high_watermark == 0  # its log here comes up empty


async def test_a_lost_notification_is_made_up_for_by_polling(nodes: Nodes) -> None:
    one, _ = await nodes.start(1)
    _, store_two = await nodes.start(2, poll_s=0.2)
    with psycopg.connect(nodes.url, autocommit=True) as db:  # every session of node 2 cut
        db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'rebalance topics 2'"
        )
    await one.create("late", 2)
    await until(lambda: store_two.get("late") is not None)
    await one.create("later", 1)  # and it listens again
    await until(lambda: store_two.get("later") is not None)


async def test_of_two_creates_of_one_name_at_once_exactly_one_wins(nodes: Nodes) -> None:
    one, store_one = await nodes.start(1)
    two, store_two = await nodes.start(2)
    names = [f"race-{i}" for i in range(20)]
    outcomes = await asyncio.gather(
        *(c.create(name, 1 + i, new=True) for name in names for i, c in enumerate((one, two))),
        return_exceptions=True,
    )
    for index, name in enumerate(names):
        pair = outcomes[2 * index : 2 * index + 2]
        won = [o for o in pair if not isinstance(o, BaseException)]
        lost = [o for o in pair if isinstance(o, BaseException)]
        assert len(won) == 1 and len(lost) == 1, pair
        assert isinstance(lost[0], TopicExistsError), lost
        assert str(lost[0]) == f"Topic '{name}' already exists."
    # Both stores hold each winner, with the winner's id and partition count.
    await until(lambda: all(store_two.get(n) and store_one.get(n) for n in names))
    for name in names:
        a, b = store_one.get(name), store_two.get(name)
        assert a is not None and b is not None
        assert (a.topic_id, len(a.partitions)) == (b.topic_id, len(b.partitions))


async def test_names_that_collide_are_not_both_created_even_at_once(nodes: Nodes) -> None:
    one, _ = await nodes.start(1)
    two, _ = await nodes.start(2)
    outcomes = await asyncio.gather(
        one.create("a.b", 1, new=True), two.create("a_b", 1, new=True), return_exceptions=True
    )
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], TopicCollisionError), outcomes
    assert "collides with existing topic" in str(refused[0])


async def test_a_change_to_a_topic_deleted_on_another_node_is_unknown(nodes: Nodes) -> None:
    one, store_one = await nodes.start(1)
    two, store_two = await nodes.start(2, poll_s=600)
    await one.create("short-lived", 2)
    await until(lambda: store_two.get("short-lived") is not None)
    stale = store_two.get("short-lived")
    assert stale is not None
    doomed = store_one.get("short-lived")
    assert doomed is not None
    await one.delete(doomed)
    for change in (
        lambda: two.add_partitions(stale, 4),
        lambda: two.set_configs(stale, {"retention.ms": "1"}),
        lambda: two.delete(stale),
    ):
        with pytest.raises(UnknownTopicError, match=r"The topic 'short-lived' does not exist\."):
            await change()
    assert store_two.get("short-lived") is None
    assert nodes.deleted[2] and set(nodes.deleted[2]) == {"short-lived"}


async def test_partitions_grown_on_another_node_refuse_a_smaller_growth(nodes: Nodes) -> None:
    one, store_one = await nodes.start(1)
    two, store_two = await nodes.start(2, poll_s=600)
    await one.create("growing", 2)
    await until(lambda: store_two.get("growing") is not None)
    mine, theirs = store_one.get("growing"), store_two.get("growing")
    assert mine is not None and theirs is not None
    await one.add_partitions(mine, 5)
    with pytest.raises(PartitionCountError) as refused:
        await two.add_partitions(theirs, 4)
    assert str(refused.value) == (
        "Topic currently has 5 partitions, which is higher than the requested 4."
    )
    assert len(theirs.partitions) == 5  # and the refusal brought the view up to date
    await two.add_partitions(theirs, 7)
    await until(lambda: len(mine.partitions) == 7)


async def test_a_nodes_own_topics_join_the_catalogue_and_its_strays_go(nodes: Nodes) -> None:
    own = nodes.store(1)  # a single node's data dir, before cluster mode
    kept = own.create("kept", 2).topic_id
    own.create("deleted-while-away", 1)
    own.create("made-again-while-away", 1)
    one, _ = await nodes.start(1, store=own)
    two, store_two = await nodes.start(2)
    await until(lambda: len(list(store_two)) == 3)
    kept_there = store_two.get("kept")
    assert kept_there is not None and kept_there.topic_id == kept
    await one.close()
    own.close()
    for name in ("deleted-while-away", "made-again-while-away"):
        topic = store_two.get(name)
        assert topic is not None
        await two.delete(topic)
    again = await two.create("made-again-while-away", 3)
    back = nodes.store(1)
    await nodes.start(1, store=back)
    assert sorted(t.name for t in back) == ["kept", "made-again-while-away"]
    made_again = back.get("made-again-while-away")
    assert made_again is not None
    assert (made_again.topic_id, len(made_again.partitions)) == (again.topic_id, 3)
    assert sorted(nodes.deleted[1]) == ["deleted-while-away", "made-again-while-away"]


async def test_a_version_3_database_is_migrated_by_the_catalogue(nodes: Nodes) -> None:
    with psycopg.connect(nodes.url, autocommit=True) as db:
        for version in (1, 2, 3):
            db.execute(MIGRATIONS[version])
        db.execute("INSERT INTO schema_version (version) VALUES (3)")
    one, _ = await nodes.start(1)
    await one.create("after-migration", 1)
    with psycopg.connect(nodes.url) as db:
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert db.execute("SELECT name, partitions FROM topics").fetchall() == [
            ("after-migration", 1)
        ]
