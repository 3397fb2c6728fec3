"""`GroupMember` against our server (in this process): many members in one event loop.

A callback log records every on_assigned / on_revoked / on_lost with its time; `owners_at`
replays it to check that no partition is held by two members at any instant.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from coordinator.clients.member import CommitFailed, GroupMember
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.groups.store.sqlite import SqliteStore
from coordinator.testing.server import RunningServer, running_server
from rebalance.config import CoordinatorConfig
from rebalance.member import Assigned, Lost, Revoked

TOPIC = "jobs"
PARTITIONS = 6
ALL = frozenset((TOPIC, p) for p in range(PARTITIONS))
CONFIG = CoordinatorConfig.from_properties(
    {
        "group.initial.rebalance.delay.ms": "100",
        "group.min.session.timeout.ms": "500",
        "group.consumer.min.session.timeout.ms": "500",
        "group.consumer.session.timeout.ms": "1500",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "300",
    }
)


@dataclass
class CallbackLog:
    """(time, member, kind, partitions) for every callback, in the order they ran."""

    entries: list[tuple[float, str, str, frozenset[tuple[str, int]]]] = field(default_factory=list)

    def member(self, server: Any, name: str, group: str = "g", **options: object) -> GroupMember:
        """A member of `group` logging its callbacks (`server`: anything with `.bootstrap`)."""

        async def record(kind: str, partitions: frozenset[tuple[str, int]]) -> None:
            self.entries.append((asyncio.get_running_loop().time(), name, kind, partitions))

        async def assigned(p: frozenset[tuple[str, int]]) -> None:
            await record("assigned", p)

        async def revoked(p: frozenset[tuple[str, int]]) -> None:
            await record("revoked", p)

        async def lost(p: frozenset[tuple[str, int]]) -> None:
            await record("lost", p)

        settings: dict[str, object] = {
            "session_timeout_ms": 1500,
            "heartbeat_interval_ms": 300,
            "rebalance_timeout_ms": 3000,
            "request_timeout_ms": 5000,
            "client_id": name,
        }
        settings |= options
        if settings.get("group_protocol") == "consumer":
            del settings["heartbeat_interval_ms"]  # the coordinator's under KIP-848
        return GroupMember(
            server.bootstrap, group, [TOPIC], on_assigned=assigned, on_revoked=revoked,
            on_lost=lost, **settings,  # type: ignore[arg-type]
        )  # fmt: skip

    def crashed(self, name: str) -> None:
        """A dead process holds nothing (it runs no callback, so the log says it here)."""
        held = self.holdings().get(name, frozenset())
        self.entries.append((asyncio.get_running_loop().time(), name, "crashed", held))

    def holdings(self) -> dict[str, frozenset[tuple[str, int]]]:
        held: dict[str, frozenset[tuple[str, int]]] = {}
        for _, name, kind, partitions in self.entries:
            current = held.get(name, frozenset())
            held[name] = current | partitions if kind == "assigned" else current - partitions
        return held

    def assert_never_shared(self) -> None:
        """Replay the log: at no point does a partition have two holders."""
        held: dict[str, frozenset[tuple[str, int]]] = {}
        for time, name, kind, partitions in self.entries:
            if kind == "assigned":
                for other, theirs in held.items():
                    shared = theirs & partitions
                    assert other == name or not shared, (
                        f"{shared} to {name} held by {other} @{time}"
                    )
                held[name] = held.get(name, frozenset()) | partitions
            else:
                held[name] = held.get(name, frozenset()) - partitions


@contextlib.asynccontextmanager
async def server() -> AsyncIterator[RunningServer]:
    async with running_server(
        topics=[(TOPIC, PARTITIONS)], groups=GroupCoordinatorExtension(CONFIG)
    ) as running:
        yield running


async def until(condition: object, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():  # type: ignore[operator]
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.02)


def split(members: list[GroupMember]) -> bool:
    owned = [m.owned() for m in members]
    return (
        sum(len(o) for o in owned) == PARTITIONS and frozenset().union(*owned) == ALL and all(owned)
    )


async def test_one_member_owns_everything_commits_and_reads_back() -> None:
    log = CallbackLog()
    async with server() as running, log.member(running, "a") as a:
        assert await a.wait_stable(10) == ALL
        await a.commit({(TOPIC, 0): 42, (TOPIC, 5): 7})
        assert await a.committed([(TOPIC, 0), (TOPIC, 5), (TOPIC, 1)]) == {
            (TOPIC, 0): 42, (TOPIC, 5): 7, (TOPIC, 1): None,
        }  # fmt: skip
        with pytest.raises(CommitFailed, match="not owned"):
            await a.commit({("other", 0): 1})
    assert [e[2] for e in log.entries] == ["assigned", "revoked"]  # close revokes, then leaves
    assert log.entries[1][3] == ALL


async def test_cooperative_members_split_join_and_leave_without_sharing() -> None:
    log = CallbackLog()
    async with server() as running:
        members = [log.member(running, f"m{i}") for i in range(3)]
        for m in members:
            m.start()
        await until(lambda: split(members))
        late = log.member(running, "late")
        late.start()
        await until(lambda: split([*members, late]))
        await members[0].close()
        await until(lambda: split([*members[1:], late]))
        for m in [*members[1:], late]:
            await m.close()
    log.assert_never_shared()
    # the cooperative protocol: a member that keeps partitions is never asked to give them all
    kinds = [kind for _, name, kind, p in log.entries if name == "m1" and kind == "revoked"]
    assert kinds.count("revoked") <= 2


async def test_a_crashed_member_is_replaced_after_its_session_timeout() -> None:
    log = CallbackLog()
    async with server() as running:
        a, b = log.member(running, "a"), log.member(running, "b")
        a.start()
        b.start()
        await until(lambda: split([a, b]))
        b.kill()  # no LeaveGroup: the coordinator finds out when b's session expires
        log.crashed("b")
        await until(lambda: a.owned() == ALL)
        await a.close()
    log.assert_never_shared()


async def test_eager_members_revoke_everything_at_each_rebalance() -> None:
    log = CallbackLog()
    async with server() as running:
        a = log.member(running, "a", assignors=("sticky",))
        a.start()
        await until(lambda: a.owned() == ALL)
        b = log.member(running, "b", assignors=("sticky",))
        b.start()
        await until(lambda: split([a, b]))
        await a.close()
        await b.close()
    revoked = [p for _, name, kind, p in log.entries if name == "a" and kind == "revoked"]
    assert revoked[0] == ALL
    log.assert_never_shared()


async def test_the_async_iterator_sees_every_change() -> None:
    async with server() as running:
        member = CallbackLog().member(running, "a")
        seen: list[object] = []

        async def watch() -> None:
            async for change in member.changes():
                seen.append(change)

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0)
        async with member:
            await member.wait_stable(10)
        await asyncio.wait_for(watcher, 5)
    assert [type(c) for c in seen] == [Assigned, Revoked]
    assert not any(isinstance(c, Lost) for c in seen)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_many_members_in_one_loop_with_churn_never_share(protocol: str) -> None:
    """Eight members (classic cooperative or KIP-848) in this event loop: join, a leave, a
    crash; every partition is always held at most once and in the end exactly once."""
    log = CallbackLog()
    async with server() as running:
        members = [log.member(running, f"m{i}", group_protocol=protocol) for i in range(5)]
        for m in members:
            m.start()
        await until(lambda: split(members), 30)
        crashed = members.pop(1)
        crashed.kill()
        log.crashed("m1")
        leaving = members.pop(0)
        await leaving.close()
        await until(lambda: split(members), 30)
        for m in members:
            await m.close()
    log.assert_never_shared()


async def test_consumer_protocol_commits_carry_the_member_epoch() -> None:
    log = CallbackLog()
    async with server() as running:
        a = log.member(running, "a", group_protocol="consumer")
        async with a:
            assert await a.wait_stable(10) == ALL
            epoch = a.generation
            await a.commit({(TOPIC, 1): 11})
            assert await a.committed([(TOPIC, 1)]) == {(TOPIC, 1): 11}
            b = log.member(running, "b", group_protocol="consumer")
            async with b:
                await until(lambda: split([a, b]))
                assert a.generation > epoch  # b's join bumped the group epoch, a reconciled
                mine = next(iter(a.owned()))
                await a.commit({mine: 12})
                with pytest.raises(CommitFailed, match="not owned"):
                    await a.commit({next(iter(b.owned())): 1})
    log.assert_never_shared()


async def test_resource_groups_share_by_weight_and_take_over_from_a_crashed_instance() -> None:
    from coordinator.clients.member import ResourceGroup

    tenants = [f"tenant-{n}" for n in range(9)]
    log = CallbackLog()

    def instance(name: str, weight: int) -> ResourceGroup:
        async def record(kind: str, resources: frozenset[str]) -> None:
            items = frozenset((r, 0) for r in resources)
            log.entries.append((asyncio.get_running_loop().time(), name, kind, items))

        async def acquired(r: frozenset[str]) -> None:
            await record("assigned", r)

        async def released(r: frozenset[str]) -> None:
            await record("revoked", r)

        async def lost(r: frozenset[str]) -> None:
            await record("lost", r)

        return ResourceGroup(
            running.bootstrap, "tenants", tenants, weight=weight, session_timeout_ms=1500,
            heartbeat_interval_ms=300, on_acquired=acquired, on_released=released, on_lost=lost,
        )  # fmt: skip

    async with server() as running:
        group = {"a": instance("a", 1), "b": instance("b", 2), "c": instance("c", 6)}
        for member in group.values():
            member.start()
        await until(lambda: [len(m.owned()) for m in group.values()] == [1, 2, 6])
        group["c"].kill()
        log.crashed("c")
        await until(lambda: [len(group[n].owned()) for n in "ab"] == [3, 6])
        assert group["a"].owned() | group["b"].owned() == set(tenants)
        await group["a"].close()
        await group["b"].close()
    log.assert_never_shared()


async def test_a_static_member_restarts_into_its_place_without_a_rebalance() -> None:
    log = CallbackLog()
    async with server() as running:
        steady = log.member(running, "steady", group_instance_id="steady-1")
        static = log.member(running, "static", group_instance_id="static-1")
        steady.start()
        static.start()
        await until(lambda: split([steady, static]))
        held, generation = static.owned(), steady.generation
        static.kill()  # a restart: no LeaveGroup (a static member never sends one on close)
        log.crashed("static")
        again = log.member(running, "static-again", group_instance_id="static-1")
        again.start()
        await until(lambda: again.owned() == held)
        assert steady.generation == generation  # KIP-345: the other member saw no rebalance
        assert [k for _, n, k, _ in log.entries if n == "steady"] == ["assigned"]
        # Closing sends no LeaveGroup and nothing else: it must not wait for a reply that
        # never comes (it did, until the request timeout, 5 s here).
        await asyncio.wait_for(again.close(), 4)
        await steady.close()
    log.assert_never_shared()


async def serve_on(
    data_dir: Any, port: int, settings: tuple[str, ...] = ()
) -> tuple[asyncio.subprocess.Process, int]:
    """`rebalance serve` in its own process (port 0: any), as users run it."""
    from serve_process import REBALANCE, STARTED

    process = await asyncio.create_subprocess_exec(
        *REBALANCE, "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", str(data_dir),
        "--topic", f"{TOPIC}:{PARTITIONS}", "--set", "group.initial.rebalance.delay.ms=100",
        "--set", "group.min.session.timeout.ms=500",
        *(arg for setting in settings for arg in ("--set", setting)),
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    STARTED.append(process.pid)
    assert process.stderr is not None
    while True:
        line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        assert line, "server exited before listening"
        if found := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
            return process, int(found.group(1))


#: KIP-848 heartbeats often enough for a test to see a move within a second.
CONSUMER_SETTINGS = (
    "group.consumer.min.heartbeat.interval.ms=100",
    "group.consumer.heartbeat.interval.ms=300",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_coordinator_moves_to_another_node(tmp_path: Any) -> None:
    """The coordinator's process is SIGKILLed and another takes over its data dir at another
    address (as when a Kafka group's coordinator partition gets a new leader on another
    broker; our server is a single node, so its move is a restart elsewhere). The members,
    bootstrapped with both addresses, lose their connection, find the coordinator at its new
    address and carry on in the generation (classic) or member epoch (KIP-848) it reloaded,
    holding what they held (the outage is shorter than the ownership lease); commits from
    before and after the move read back."""
    classic, consumer = CallbackLog(), CallbackLog()
    process, port = await serve_on(tmp_path, 0, CONSUMER_SETTINGS)
    new_port = free_port()
    both = SimpleNamespace(bootstrap=f"127.0.0.1:{port},127.0.0.1:{new_port}")
    lease = {"session_timeout_ms": 15_000, "rebalance_timeout_ms": 15_000}
    members = [classic.member(both, f"c{i}", **lease) for i in range(2)]
    members += [
        consumer.member(both, f"k{i}", group="k", group_protocol="consumer", **lease)
        for i in range(2)
    ]
    for m in members:
        m.start()
    try:
        await until(lambda: split(members[:2]) and split(members[2:]), 30)
        assert {m.member.coordinator for m in members} == {("127.0.0.1", port)}
        before = [(m.owned(), m.generation) for m in members]
        mine = [min(m.owned()) for m in members]
        for m, tp in zip(members, mine, strict=True):
            await m.commit({tp: 7})
        process.kill()
        await process.wait()
        process, _ = await serve_on(tmp_path, new_port, CONSUMER_SETTINGS)
        moved = ("127.0.0.1", new_port)
        await until(lambda: all(m.member.coordinator == moved for m in members), 30)
        await until(lambda: all(m.member.settled for m in members), 30)
        assert [(m.owned(), m.generation) for m in members] == before
        for m, tp in zip(members, mine, strict=True):
            assert await m.committed([tp]) == {tp: 7}
            await m.commit({tp: 8})
            assert await m.committed([tp]) == {tp: 8}
        for m in members:
            await m.close()
    finally:
        process.kill()
        await process.wait()
    for log in (classic, consumer):
        assert not any(kind == "lost" for _, _, kind, _ in log.entries)
        log.assert_never_shared()


async def test_a_commit_answered_not_coordinator_is_retried_at_the_rediscovered_one() -> None:
    """A failed write makes our coordinator give up the group's partition and load it again
    from what is durable (`coordinator.groups.runtime`); the refused commit is answered
    NOT_COORDINATOR, as after a Kafka coordinator moved away. The member rediscovers the
    coordinator (FindCoordinator again) and its retried commit lands; nobody loses anything."""
    log = CallbackLog()
    groups = GroupCoordinatorExtension(CONFIG)
    async with running_server(topics=[(TOPIC, PARTITIONS)], groups=groups) as running:
        members = [log.member(running, f"m{i}") for i in range(2)]
        for m in members:
            m.start()
        await until(lambda: split(members))
        assert groups.runtime is not None
        store = groups.runtime.store
        assert isinstance(store, SqliteStore)
        write = store.append_then  # (how the runtime writes)
        refused: list[object] = []

        def fail_once(records: Any, done: Callable[[BaseException | None], None]) -> None:
            if not refused:
                refused.append(records)
                error = OSError("injected: the disk refused the write")
                asyncio.get_running_loop().call_soon(done, error)
                return
            write(records, done)

        store.append_then = fail_once  # type: ignore[method-assign]
        tp = min(members[0].owned())
        found = members[0].sent["FindCoordinator"]
        await members[0].commit({tp: 11})
        assert refused and members[0].sent["FindCoordinator"] == found + 1
        assert await members[1].committed([tp]) == {tp: 11}
        for m in members:
            await m.close()
    assert not any(kind == "lost" for _, _, kind, _ in log.entries)
    log.assert_never_shared()


async def test_a_static_consumer_protocol_member_comes_back_to_its_partitions() -> None:
    """KIP-848 static membership: closing a member that has a `group_instance_id` sends member
    epoch -2, a temporary leave; the coordinator keeps its partitions for the instance, and a
    new member with the same instance id gets exactly those back, without a group epoch bump:
    the other member sees nothing happen."""
    log = CallbackLog()
    groups = GroupCoordinatorExtension(CONFIG)
    async with running_server(topics=[(TOPIC, PARTITIONS)], groups=groups) as running:
        options = {"group_protocol": "consumer"}
        steady = log.member(running, "steady", group_instance_id="steady-1", **options)
        static = log.member(running, "static", group_instance_id="static-1", **options)
        steady.start()
        static.start()
        await until(lambda: split([steady, static]))
        assert groups.runtime is not None
        group = groups.runtime.core.group("g")
        assert group is not None
        held, epoch, formed = static.owned(), group.group_epoch, len(log.entries)
        await static.close()  # revokes (callbacks), then the heartbeat with epoch -2
        # the coordinator kept the instance's place and partitions (nobody else gets them)
        assert group.members[static.member_id].member_epoch == -2
        assert steady.owned() == ALL - held
        again = log.member(running, "static-again", group_instance_id="static-1", **options)
        again.start()
        await until(lambda: again.owned() == held)
        assert group.group_epoch == epoch
        assert [n for _, n, _, _ in log.entries[formed:]] == ["static", "static-again"]
        await again.close()
        await steady.close()
    log.assert_never_shared()


async def test_a_regex_subscription_follows_the_topics_the_coordinator_matches() -> None:
    """KIP-848 regex subscription: the coordinator matches `jobs.*` against the topics that
    exist (not `other`), and a matching topic created while the group runs is assigned too."""
    from confluent_kafka.admin import AdminClient, NewTopic

    groups = GroupCoordinatorExtension(CONFIG)
    topics = [(TOPIC, PARTITIONS), ("jobs-extra", 2), ("other", 2)]
    async with running_server(topics=topics, groups=groups) as running:
        members = [
            GroupMember(running.bootstrap, "regex", topic_regex="jobs.*", client_id=f"r{i}",
                        group_protocol="consumer", session_timeout_ms=1500)
            for i in range(2)
        ]  # fmt: skip
        for m in members:
            m.start()

        def split_of(expected: frozenset[tuple[str, int]]) -> bool:
            owned = [m.owned() for m in members]
            return frozenset().union(*owned) == expected and sum(map(len, owned)) == len(expected)

        matched = ALL | {("jobs-extra", p) for p in range(2)}
        await until(lambda: split_of(matched))
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        created = admin.create_topics([NewTopic("jobs-later", 2)])
        await asyncio.to_thread(created["jobs-later"].result, 30)
        await until(lambda: split_of(matched | {("jobs-later", p) for p in range(2)}))
        for m in members:
            await m.close()
    with pytest.raises(ValueError, match="group_protocol='consumer'"):
        GroupMember("127.0.0.1:9092", "g", topic_regex="jobs.*")
