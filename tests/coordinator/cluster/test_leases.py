"""Leases on a real PostgreSQL: nodes share the `__consumer_offsets` partitions, a dead or cut-off
node's partitions move to a live one at a higher epoch, a leaving node hands over at once, and
every expiry is judged by the server's clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest

from coordinator.cluster.leases import LeaseManager, LeaseSettings
from coordinator.errors import ClusterError, UsageError
from coordinator.node.ownership import NodeAddress

FAST = LeaseSettings(lease_ms=1000, renew_ms=250, partitions=50)


class Node:
    """A LeaseManager and what its callbacks told."""

    def __init__(self, url: str, node_id: int, clock: Callable[[], float] = time.monotonic):
        self.acquired: list[tuple[int, int]] = []
        self.lost: list[int] = []
        self.leases = LeaseManager(
            url,
            NodeAddress(node_id, "127.0.0.1", 9000 + node_id),
            settings=FAST,
            on_acquired=self._acquired,
            on_lost=self._lost,
            clock=clock,
        )

    async def _acquired(self, partition: int, epoch: int) -> None:
        self.acquired.append((partition, epoch))

    async def _lost(self, partition: int) -> None:
        self.lost.append(partition)

    def held(self) -> set[int]:
        return set(self.leases.held())


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.05)


@pytest.fixture
async def nodes(postgresql_database: str) -> AsyncIterator[Callable[..., Node]]:
    started: list[Node] = []

    def make(node_id: int, **options: object) -> Node:
        node = Node(postgresql_database, node_id, **options)  # type: ignore[arg-type]
        started.append(node)
        return node

    yield make
    for node in started:
        await node.leases.close()


def lease_rows(url: str) -> dict[int, tuple[int | None, int]]:
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT partition, owner, epoch FROM leases").fetchall()
    return {p: (owner, epoch) for p, owner, epoch in rows}


async def test_one_node_takes_every_partition_at_epoch_one(
    nodes: Callable[..., Node], postgresql_database: str
) -> None:
    a = nodes(1)
    await a.leases.start()
    await until(lambda: len(a.acquired) == 50)
    assert a.held() == set(range(50))
    assert sorted(a.acquired) == [(p, 1) for p in range(50)]
    assert all(a.leases.may_answer(p) for p in range(50))
    assert a.leases.owner_of(7) == a.leases.node
    assert lease_rows(postgresql_database) == {p: (1, 1) for p in range(50)}


async def test_two_nodes_share_the_partitions_and_a_joiner_is_handed_its_share(
    nodes: Callable[..., Node],
) -> None:
    a, b = nodes(1), nodes(2)
    await a.leases.start()
    await until(lambda: len(a.held()) == 50)
    await b.leases.start()
    await until(lambda: len(a.held()) == 25 and len(b.acquired) == 25)
    assert a.held().isdisjoint(b.held())
    # Handed over, not expired: the joiner got them at the next epoch, and A was told first.
    assert sorted(a.lost) == sorted(b.held())
    assert {epoch for _, epoch in b.acquired} == {2}
    assert [n.node_id for n in a.leases.live_nodes()] == [1, 2]
    await until(lambda: all(a.leases.owner_of(p) == b.leases.node for p in b.held()))
    assert not any(a.leases.may_answer(p) for p in b.held())


async def test_a_node_whose_leases_lapse_loses_its_partitions_to_a_higher_epoch(
    nodes: Callable[..., Node], postgresql_database: str
) -> None:
    a, b = nodes(1), nodes(2)
    await a.leases.start()
    await until(lambda: len(a.held()) == 50)
    await b.leases.start()
    await until(lambda: len(a.held()) == 25 and len(b.held()) == 25)
    epochs_before = lease_rows(postgresql_database)
    b_partitions = b.held()
    await b.leases.close()  # B stops renewing, as if dead; its leases lapse on the server
    await until(lambda: len(a.held()) == 50, timeout=15)
    after = lease_rows(postgresql_database)
    for p in b_partitions:
        assert after[p] == (1, epochs_before[p][1] + 1)


def terminate_sessions(server: str, database_url: str, node_id: int) -> int:
    """pg_terminate_backend of every session of the node (through the server's own database:
    the node's may refuse new connections)."""
    with psycopg.connect(server, autocommit=True) as db:
        rows = db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND application_name = %s",
            (database_url.rsplit("/", 1)[1], f"rebalance node {node_id}"),
        ).fetchall()
    return len(rows)


async def test_a_killed_connection_is_opened_again_and_the_epochs_stay(
    nodes: Callable[..., Node], postgresql_database: str, postgresql: str
) -> None:
    a = nodes(1)
    await a.leases.start()
    await until(lambda: len(a.held()) == 50)
    # Its lease session and its listener.
    assert terminate_sessions(postgresql, postgresql_database, 1) == 2
    await asyncio.sleep(FAST.lease_ms / 1000)
    assert lease_rows(postgresql_database) == {p: (1, 1) for p in range(50)}
    assert a.held() == set(range(50)) and a.lost == []


async def test_a_node_cut_from_postgresql_resigns_and_its_partitions_move_up_an_epoch(
    nodes: Callable[..., Node], postgresql_database: str, postgresql: str
) -> None:
    """Node A's sessions are killed and it cannot connect again: at its local deadline it stops
    answering and reports every partition lost; B takes them once the server's leases end."""
    a, b = nodes(1), nodes(2)
    await a.leases.start()
    await until(lambda: len(a.held()) == 50)
    await b.leases.start()
    await until(lambda: len(a.held()) == 25 and len(b.acquired) == 25)
    a_partitions, before = a.held(), lease_rows(postgresql_database)
    handed_over = len(a.lost)
    database = postgresql_database.rsplit("/", 1)[1]
    with psycopg.connect(postgresql, autocommit=True) as db:
        db.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')  # B keeps its own
    try:
        terminate_sessions(postgresql, postgresql_database, 1)
        await until(lambda: sorted(a.lost[handed_over:]) == sorted(a_partitions), timeout=5)
        assert not any(a.leases.may_answer(p) for p in a_partitions)
        await until(lambda: len(b.held()) == 50, timeout=10)
    finally:
        with psycopg.connect(postgresql, autocommit=True) as db:
            db.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    after = lease_rows(postgresql_database)
    assert {p: after[p] for p in a_partitions} == {p: (2, before[p][1] + 1) for p in a_partitions}


async def test_release_all_hands_every_partition_over_at_once(
    nodes: Callable[..., Node], postgresql_database: str
) -> None:
    a, b = nodes(1), nodes(2)
    await a.leases.start()
    await until(lambda: len(a.held()) == 50)
    await b.leases.start()
    await until(lambda: len(a.held()) == 25 and len(b.held()) == 25)
    began = time.monotonic()
    await a.leases.release_all()
    assert sorted(a.lost) == list(range(50))
    await until(lambda: len(b.held()) == 50)
    # Far sooner than the lease: taken on the NOTIFY, not after expiry.
    assert time.monotonic() - began < FAST.lease_ms / 1000
    assert {owner for owner, _ in lease_rows(postgresql_database).values()} == {2}


async def test_expiry_is_judged_by_the_servers_clock(
    nodes: Callable[..., Node], postgresql_database: str
) -> None:
    """A node whose own clock stands still still loses its leases when the server's clock says
    they ended: the node's clock is never sent nor compared."""
    frozen = time.monotonic()
    a = nodes(1, clock=lambda: frozen)
    await a.leases.start()
    await until(lambda: len(a.held()) == 50)
    with psycopg.connect(postgresql_database) as db:
        (left,) = db.execute(
            "SELECT min(extract(epoch FROM lease_expires - clock_timestamp())) FROM leases"
        ).fetchone() or (0,)
    assert 0 < float(left) <= FAST.lease_ms / 1000
    await a.leases.close()  # stops renewing; by its own clock its deadlines never pass
    b = nodes(2)
    await b.leases.start()
    await until(lambda: len(b.acquired) == 50, timeout=15)
    assert {epoch for _, epoch in b.acquired} == {2}


async def test_a_node_id_live_elsewhere_is_refused_in_one_line(nodes: Callable[..., Node]) -> None:
    a = nodes(1)
    await a.leases.start()
    twin = nodes(1)
    with pytest.raises(ClusterError) as refused:
        await twin.leases.start()
    message = str(refused.value)
    assert "\n" not in message
    assert "node id 1 is live" in message and "127.0.0.1:9001" in message


async def test_a_node_id_is_free_again_once_released(nodes: Callable[..., Node]) -> None:
    a = nodes(1)
    await a.leases.start()
    await a.leases.release_all()
    again = nodes(1)
    await again.leases.start()
    await until(lambda: len(again.held()) == 50)


async def test_a_wrong_url_and_an_unreachable_server_fail_in_one_line() -> None:
    for url in ("postgresql://nobody@127.0.0.1:1/none", "postgresql://x@[bad/db"):
        node = Node(url, 1)
        with pytest.raises(ClusterError) as failed:
            await node.leases.start()
        assert "\n" not in str(failed.value)


def test_lease_settings_have_kafka_like_names_and_are_checked() -> None:
    settings = LeaseSettings.from_settings({"cluster.lease.ms": "9000"})
    assert (settings.lease_ms, settings.renew_ms, settings.partitions) == (9000, 2000, 50)
    with pytest.raises(UsageError):
        LeaseSettings.from_settings({"cluster.lease.renew.ms": "4000"})
    with pytest.raises(UsageError):
        LeaseSettings.from_settings({"cluster.lease.ms": "soon"})
