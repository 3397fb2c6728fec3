"""Real consumer groups against the server: aiokafka, kafka-python and confluent-kafka
(librdkafka, classic protocol), unmodified, each member in its own process.

Scenarios, per library: one member gets every partition and consumes every record; three members
split the partitions without overlap; a member leaves and the others take over; a member is
SIGKILLed and the others take over after its session timeout. Across libraries: commit, restart
the server, resume from the committed offset; a static member restarts without the others
rebalancing; one group mixing all three libraries. Admin clients list and describe groups.
KIP-848 (librdkafka `group.protocol=consumer`): the same scenarios, commits carrying the member
epoch, a topic created and partitions added while the group runs, classic and consumer groups
side by side on one server, an emptied consumer group then taken over by a classic one, and a
running classic group migrated online to a consumer group and back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import RunningServer, running_server
from rebalance.config import CoordinatorConfig

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

TOPIC = "orders"
PARTITIONS = 3
RECORDS = 30
LIBRARIES = ["aiokafka", "kafka-python", "confluent"]
GROUP_CONFIG = CoordinatorConfig.from_properties(
    {
        "group.initial.rebalance.delay.ms": "300",
        "group.min.session.timeout.ms": "1000",
        # KIP-848 groups: the coordinator sets the session and the heartbeat interval.
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.session.timeout.ms": "4000",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "300",
    }
)
PROC = Path(__file__).with_name("consumer_proc.py")
ALL = {(TOPIC, p) for p in range(PARTITIONS)}
STATIC_SESSION_MS = 20_000


@dataclass
class Member:
    """A consumer process and what it has reported so far."""

    name: str
    process: asyncio.subprocess.Process
    assignments: list[set[tuple[str, int]]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    closed: bool = False
    reader: asyncio.Task[None] | None = None
    #: (when, what it holds from then on): every assignment and revocation, by the clock of
    #: the process that wrote it.
    holdings: list[tuple[float, frozenset[tuple[str, int]]]] = field(default_factory=list)

    @property
    def assignment(self) -> set[tuple[str, int]]:
        return self.assignments[-1] if self.assignments else set()

    async def read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            if line["event"] == "assigned":
                self.assignments.append({(t, p) for t, p in line["partitions"]})
                self.holdings.append((line["at"], frozenset(self.assignment)))
            elif line["event"] == "revoked":
                revoked = {(t, p) for t, p in line["partitions"]}
                held = self.holdings[-1][1] if self.holdings else frozenset()
                self.holdings.append((line["at"], held - revoked))
            elif line["event"] == "record":
                self.records.append(line)
            elif line["event"] == "committed":
                for t, p, o in line["offsets"]:
                    self.committed[(t, p)] = o
            elif line["event"] == "closed":
                self.closed = True

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(self.process.wait(), 30)
        if self.reader is not None:
            await self.reader

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()


async def start_member(
    server: RunningServer,
    lib: str,
    group: str,
    *,
    name: str = "",
    instance_id: str | None = None,
    session_ms: int = 4000,
    strategies: tuple[str, ...] = ("range", "roundrobin"),
    topics: tuple[str, ...] = (TOPIC,),
) -> Member:
    args = [
        sys.executable, str(PROC), "--lib", lib, "--bootstrap", server.bootstrap,
        "--group", group, "--topic", ",".join(topics), "--session-ms", str(session_ms),
        "--heartbeat-ms", "300", "--client-id", name or lib,
    ]  # fmt: skip
    for strategy in strategies:
        args += ["--strategy", strategy]
    if instance_id:
        args += ["--instance-id", instance_id]
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    member = Member(name or lib, process)
    member.reader = asyncio.create_task(member.read())
    return member


async def eventually(condition: Callable[[], bool], what: str, timeout: float = 45) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.1)


def produce(bootstrap: str, start: int, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(start, start + count):
        producer.send(TOPIC, value=f"r{i}".encode(), partition=i % PARTITIONS)
    producer.flush(timeout=30)
    producer.close(timeout=10)


def logged_events(data_dir: Path) -> list[dict[str, Any]]:
    """Every event of the node's event log (`DATA_DIR/events`)."""
    return [
        json.loads(line)
        for path in sorted((data_dir / "events").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def committed(members: list[Member]) -> dict[tuple[str, int], int]:
    """The group's committed offsets as its members reported them (the highest per partition:
    a partition that moved was committed by both its owners)."""
    merged: dict[tuple[str, int], int] = {}
    for member in members:
        for tp, offset in member.committed.items():
            merged[tp] = max(offset, merged.get(tp, 0))
    return merged


def split_cleanly(members: list[Member]) -> bool:
    """Every partition owned exactly once, and every member owns something."""
    assignments = [m.assignment for m in members]
    union = set().union(*assignments)
    return union == ALL and sum(len(a) for a in assignments) == len(ALL) and all(assignments)


@contextlib.asynccontextmanager
async def node(data_dir: Path | None = None) -> AsyncIterator[RunningServer]:
    async with running_server(
        topics=[(TOPIC, PARTITIONS)],
        groups=GroupCoordinatorExtension(GROUP_CONFIG),
        data_dir=data_dir,
    ) as server:
        yield server


@contextlib.asynccontextmanager
async def members_of(*members: Member) -> AsyncIterator[None]:
    try:
        yield
    finally:
        for m in members:
            if m.process.returncode is None:
                await m.kill()
            if m.reader is not None:
                m.reader.cancel()


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_one_member_gets_everything_and_consumes_every_record(lib: str) -> None:
    async with node() as server:
        await asyncio.to_thread(produce, server.bootstrap, 0, RECORDS)
        member = await start_member(server, lib, f"solo-{lib}")
        async with members_of(member):
            await eventually(lambda: member.assignment == ALL, "the member owns every partition")
            await eventually(lambda: len(member.records) >= RECORDS, "every record is consumed")
            values = sorted(r["value"] for r in member.records)
            assert values == sorted(f"r{i}" for i in range(RECORDS))
            await member.stop()
            assert member.closed


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_three_members_split_then_survivors_take_over(lib: str) -> None:
    async with node() as server:
        members = [
            await start_member(server, lib, f"trio-{lib}", name=f"{lib}-{i}") for i in range(3)
        ]
        async with members_of(*members):
            await eventually(lambda: split_cleanly(members), "three members split 3 partitions")
            assert all(len(m.assignment) == 1 for m in members)
            # A clean leave (LeaveGroup): the other two take over its partition.
            await members[0].stop()
            await eventually(lambda: split_cleanly(members[1:]), "two survivors own everything")
            # A crash (SIGKILL): the last one takes over after the session timeout.
            await members[1].kill()
            started = time.monotonic()
            await eventually(lambda: members[2].assignment == ALL, "the last member owns all")
            assert time.monotonic() - started >= 2.0  # waited for the session to expire


async def test_commit_restart_resume_from_committed_offsets(tmp_path: Path) -> None:
    async with node(tmp_path) as server:
        await asyncio.to_thread(produce, server.bootstrap, 0, RECORDS)
        first = await start_member(server, "kafka-python", "resume")
        async with members_of(first):
            await eventually(
                lambda: sum(first.committed.values()) == RECORDS, "every record is committed"
            )
            await first.stop()
    # The server restarts on the same data dir; the group's offsets come back from SQLite.
    async with node(tmp_path) as server:
        await asyncio.to_thread(produce, server.bootstrap, RECORDS, 9)
        second = await start_member(server, "confluent", "resume")
        async with members_of(second):
            await eventually(lambda: len(second.records) >= 9, "the new records are consumed")
            await asyncio.sleep(1.0)  # anything older would show up by now
            assert sorted(r["value"] for r in second.records) == sorted(
                f"r{i}" for i in range(RECORDS, RECORDS + 9)
            )
            await second.stop()


@pytest.mark.parametrize("lib", ["aiokafka", "kafka-python", "confluent"])
async def test_static_member_restart_does_not_rebalance_the_others(lib: str) -> None:
    # A session long enough that a restart under load still comes back within it.
    static = functools.partial(start_member, session_ms=STATIC_SESSION_MS)
    async with node() as server:
        steady = await static(server, lib, f"static-{lib}", name="steady", instance_id="s1")
        bouncing = await static(server, lib, f"static-{lib}", name="bouncing", instance_id="s2")
        async with members_of(steady, bouncing):
            await eventually(lambda: split_cleanly([steady, bouncing]), "two static members split")
            rebalances_before = len(steady.assignments)
            # Static members do not leave on close: a restart within the session timeout
            # replaces the old member id without a rebalance (KIP-345).
            await bouncing.kill()
            again = await static(server, lib, f"static-{lib}", name="bouncing", instance_id="s2")
            async with members_of(again):
                await eventually(lambda: bool(again.assignment), "the restarted member is back")
                assert again.assignment == bouncing.assignment
                await asyncio.sleep(1.5)
                assert len(steady.assignments) == rebalances_before, "the steady member rebalanced"


async def test_one_group_mixing_all_three_libraries() -> None:
    async with node() as server:
        await asyncio.to_thread(produce, server.bootstrap, 0, RECORDS)
        members = [
            await start_member(server, lib, "mixed", strategies=("roundrobin",))
            for lib in LIBRARIES
        ]
        async with members_of(*members):
            await eventually(lambda: split_cleanly(members), "the three libraries split the topic")
            await eventually(
                lambda: sum(len(m.records) for m in members) >= RECORDS, "all records consumed"
            )
            values = sorted(r["value"] for m in members for r in m.records)
            assert values == sorted(f"r{i}" for i in range(RECORDS))


async def test_admin_clients_list_and_describe_groups() -> None:
    async with node() as server:
        member = await start_member(server, "aiokafka", "watched")
        async with members_of(member):
            await eventually(lambda: member.assignment == ALL, "the group is stable")
            kafka_python = await asyncio.to_thread(kafka_python_admin_view, server.bootstrap)
            confluent = await asyncio.to_thread(confluent_admin_view, server.bootstrap)
    for listed, state, members in (kafka_python, confluent):
        assert "watched" in listed
        assert state.lower() == "stable"
        assert members == 1


def kafka_python_admin_view(bootstrap: str) -> tuple[set[str], str, int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = {entry["group_id"] for entry in admin.list_groups()}
        described = admin.describe_groups(["watched"])["watched"]
        assert described["members"][0]["member_assignment"]["assigned_partitions"] == [
            {"topic": TOPIC, "partitions": [0, 1, 2]}
        ]
        return listed, described["group_state"], len(described["members"])
    finally:
        admin.close()


def confluent_admin_view(bootstrap: str) -> tuple[set[str], str, int]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(timeout=30)
    names = {g.group_id for g in listed.valid}
    described = admin.describe_consumer_groups(["watched"])["watched"].result(timeout=30)
    return names, described.state.name, len(described.members)


# ============================================================ KIP-848 (group.protocol=consumer)
KIP848 = "confluent-consumer"


async def test_kip848_one_member_gets_everything_and_consumes_every_record() -> None:
    async with node() as server:
        await asyncio.to_thread(produce, server.bootstrap, 0, RECORDS)
        member = await start_member(server, KIP848, "solo-848")
        async with members_of(member):
            await eventually(lambda: member.assignment == ALL, "the member owns every partition")
            await eventually(lambda: len(member.records) >= RECORDS, "every record is consumed")
            values = sorted(r["value"] for r in member.records)
            assert values == sorted(f"r{i}" for i in range(RECORDS))
            await member.stop()
            assert member.closed


async def test_kip848_three_members_split_then_survivors_take_over() -> None:
    async with node() as server:
        members = [await start_member(server, KIP848, "trio-848", name=f"m{i}") for i in range(3)]
        async with members_of(*members):
            await eventually(lambda: split_cleanly(members), "three members split 3 partitions")
            # Never two owners: no partition reported by two members at once, at any time.
            await members[0].stop()  # a clean leave (epoch -1)
            await eventually(lambda: split_cleanly(members[1:]), "two survivors own everything")
            await members[1].kill()  # a crash: the session (4 s) expires
            started = time.monotonic()
            await eventually(lambda: members[2].assignment == ALL, "the last member owns all")
            assert time.monotonic() - started >= 2.0


async def test_kip848_static_member_restart_keeps_its_partitions_and_the_others_untouched() -> None:
    async with node() as server:
        steady = await start_member(server, KIP848, "static-848", name="steady", instance_id="s1")
        bouncing = await start_member(
            server, KIP848, "static-848", name="bouncing", instance_id="s2"
        )
        async with members_of(steady, bouncing):
            await eventually(lambda: split_cleanly([steady, bouncing]), "two static members split")
            reports_before = len(steady.assignments)
            owned = bouncing.assignment
            # A static member closes with epoch -2 (a temporary leave): its partitions wait for
            # it; the restarted process takes the instance id over with them.
            await bouncing.stop()
            again = await start_member(
                server, KIP848, "static-848", name="bouncing", instance_id="s2"
            )
            async with members_of(again):
                await eventually(lambda: again.assignment == owned, "the restart gets its own back")
                await asyncio.sleep(1.5)
                assert len(steady.assignments) == reports_before, "the steady member moved"


async def test_kip848_commit_restart_resume_from_committed_offsets(tmp_path: Path) -> None:
    async with node(tmp_path) as server:
        await asyncio.to_thread(produce, server.bootstrap, 0, RECORDS)
        first = await start_member(server, KIP848, "resume-848")
        async with members_of(first):
            await eventually(
                lambda: sum(first.committed.values()) == RECORDS, "every record is committed"
            )
            await first.stop()
    # librdkafka committed with OffsetCommit v9 carrying its member epoch, and the coordinator
    # checked it against the member's (the event log says so: the epoch, no fenced commit).
    commits = [e for e in logged_events(tmp_path) if e.get("group") == "resume-848"]
    accepted = [e for e in commits if e["type"] == "offset_commit"]
    assert accepted and all(e["generation"] >= 1 and e["member"] for e in accepted)
    assert not [e for e in commits if e["type"] == "commit_fenced"]
    # The server restarts on the same data dir: the group and its offsets come back.
    async with node(tmp_path) as server:
        await asyncio.to_thread(produce, server.bootstrap, RECORDS, 9)
        second = await start_member(server, KIP848, "resume-848")
        async with members_of(second):
            await eventually(lambda: len(second.records) >= 9, "the new records are consumed")
            await asyncio.sleep(1.0)
            assert sorted(r["value"] for r in second.records) == sorted(
                f"r{i}" for i in range(RECORDS, RECORDS + 9)
            )
            await second.stop()


async def test_kip848_topic_created_and_partitions_added_while_the_group_runs() -> None:
    """The members subscribe to a topic that does not exist yet: its creation, and partitions
    added to the other topic, bump the group epoch and the new partitions are assigned once."""
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    async with node() as server:
        members = [
            await start_member(server, KIP848, "grow-848", name=f"m{i}", topics=(TOPIC, "later"))
            for i in range(2)
        ]
        async with members_of(*members):
            await eventually(lambda: split_cleanly(members), "two members split 3 partitions")
            admin = AdminClient({"bootstrap.servers": server.bootstrap})

            def split(expected: set[tuple[str, int]]) -> bool:
                owned = [m.assignment for m in members]
                return set().union(*owned) == expected and sum(map(len, owned)) == len(expected)

            created = admin.create_topics([NewTopic("later", 2)])
            await asyncio.to_thread(created["later"].result, 30)
            with_later = ALL | {("later", p) for p in range(2)}
            await eventually(lambda: split(with_later), "the new topic is assigned once")
            grown = admin.create_partitions([NewPartitions(TOPIC, 5)])
            await asyncio.to_thread(grown[TOPIC].result, 30)
            with_more = with_later | {(TOPIC, p) for p in range(5)}
            await eventually(lambda: split(with_more), "the new partitions are assigned once")


async def test_classic_and_consumer_groups_side_by_side_then_a_group_changes_type() -> None:
    """One server, one topic, two groups at once: a classic group (kafka-python and librdkafka
    classic) and a KIP-848 group (librdkafka `group.protocol=consumer`); each consumes every
    record once. Then the KIP-848 group empties and a classic consumer takes its id: the empty
    consumer group becomes a classic group, resuming from the offsets the KIP-848 members
    committed."""
    async with node() as server:
        await asyncio.to_thread(produce, server.bootstrap, 0, RECORDS)
        classic = [
            await start_member(server, lib, "side-classic", strategies=("roundrobin",))
            for lib in ("kafka-python", "confluent")
        ]
        modern = [await start_member(server, KIP848, "side-848", name=f"m{i}") for i in range(2)]
        async with members_of(*classic, *modern):
            for members in (classic, modern):
                await eventually(lambda m=members: split_cleanly(m), "each group splits the topic")
                await eventually(
                    lambda m=members: sum(committed(m).values()) == RECORDS,
                    "each group consumes and commits every record",
                )
                values = {r["value"] for m in members for r in m.records}
                assert values == {f"r{i}" for i in range(RECORDS)}
            for member in modern:
                await member.stop()  # epoch -1: the consumer group is empty now
            await asyncio.to_thread(produce, server.bootstrap, RECORDS, 6)
            successor = await start_member(server, "confluent", "side-848", name="classic")
            async with members_of(successor):
                await eventually(lambda: successor.assignment == ALL, "the classic one owns all")
                await eventually(lambda: len(successor.records) >= 6, "it consumes the new ones")
                await asyncio.sleep(1.0)
                assert sorted(r["value"] for r in successor.records) == sorted(
                    f"r{i}" for i in range(RECORDS, RECORDS + 6)
                )


async def test_kip848_admin_clients_see_the_consumer_group() -> None:
    from confluent_kafka import ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    async with node() as server:
        members = [await start_member(server, KIP848, "admin-848", name=f"m{i}") for i in range(2)]
        async with members_of(*members):
            await eventually(lambda: split_cleanly(members), "two members split 3 partitions")
            admin = AdminClient({"bootstrap.servers": server.bootstrap})

            def describe() -> Any:
                return admin.describe_consumer_groups(["admin-848"])["admin-848"].result(30)

            def listed() -> Any:
                return admin.list_consumer_groups().result(30).valid

            described = await asyncio.to_thread(describe)
            assert described.type == ConsumerGroupType.CONSUMER
            assert described.state.name == "STABLE"
            owned = {
                (tp.topic, tp.partition)
                for m in described.members
                for tp in m.assignment.topic_partitions
            }
            assert owned == ALL and {m.client_id for m in described.members} == {"m0", "m1"}
            (group,) = [g for g in await asyncio.to_thread(listed) if g.group_id == "admin-848"]
            assert group.type == ConsumerGroupType.CONSUMER


def owned_twice(members: list[Member]) -> list[str]:
    """Every moment, by the members' own clocks, at which two members held one partition."""
    holding: dict[str, frozenset[tuple[str, int]]] = {}
    timeline = sorted((at, m.name, held) for m in members for at, held in m.holdings)
    overlaps = []
    for at, name, held in timeline:
        holding[name] = held
        for other, theirs in holding.items():
            if other != name and held & theirs:
                overlaps.append(f"{at:.3f}: {name} and {other} hold {sorted(held & theirs)}")
    return overlaps


@pytest.mark.parametrize(
    ("lib", "strategy"),
    [("kafka-python", "range"), ("aiokafka", "range"), ("confluent", "cooperative-sticky")],
)
async def test_kip848_online_migration_of_a_running_classic_group(lib: str, strategy: str) -> None:
    """Kafka 4.0's online migration (`group.consumer.migration.policy=bidirectional`): two classic
    consumers (kafka-python or aiokafka with range, eager; or librdkafka with cooperative-sticky,
    which lists what it owns and gives up only what moves) consume a topic; a librdkafka consumer
    with `group.protocol=consumer` joins the same group id, which becomes a consumer group at once
    (upgrade); the classic members stay in it, keep what they owned but the one partition that
    moves to the new member, and nobody holds a partition another member holds. Then the KIP-848
    member leaves: the group is a classic group again (downgrade) and the two split the topic as
    before; every record is consumed."""
    groups = GroupCoordinatorExtension(GROUP_CONFIG)
    async with running_server(topics=[(TOPIC, PARTITIONS)], groups=groups) as server:
        await asyncio.to_thread(produce, server.bootstrap, 0, RECORDS)
        classic = [
            await start_member(server, lib, "migrating", name=f"{lib}{i}", strategies=(strategy,))
            for i in range(2)
        ]
        async with members_of(*classic):

            def group() -> Any:
                assert groups.runtime is not None
                return groups.runtime.core.group("migrating")

            await eventually(lambda: split_cleanly(classic), "the classic members split")
            before = [m.assignment for m in classic]
            assert group().group_type == "classic"
            upgraded_at = time.time()
            modern = await start_member(server, KIP848, "migrating", name="kip848")
            async with members_of(modern):
                members = [*classic, modern]
                await eventually(lambda: split_cleanly(members), "the three split the topic")
                assert group().group_type == "consumer"
                await eventually(lambda: group().kafka_state == "Stable", "the group is Stable")
                for member, owned in zip(classic, before, strict=True):
                    assert member.assignment <= owned, "a classic member got another partition"
                moved = set().union(*before) - set().union(*(m.assignment for m in classic))
                assert modern.assignment == moved and len(moved) == 1
                await asyncio.to_thread(produce, server.bootstrap, RECORDS, RECORDS)
                await eventually(
                    lambda: (
                        {r["value"] for m in members for r in m.records}
                        >= {f"r{i}" for i in range(2 * RECORDS)}
                    ),
                    "every record is consumed",
                )
                # and committed: by the classic members as in a classic group (their
                # generation is their member epoch), by the KIP-848 one with its member epoch
                await eventually(
                    lambda: sum(committed(members).values()) == 2 * RECORDS,
                    "every record is committed",
                )
                if strategy == "cooperative-sticky":
                    # They never stopped consuming what they kept: only the moved one was revoked.
                    for member in classic:
                        kept = member.assignment
                        held = [h for at, h in member.holdings if at >= upgraded_at]
                        assert held and all(kept <= h for h in held), member.holdings
                await modern.stop()  # epoch -1: the last KIP-848 member leaves
                await eventually(lambda: group().group_type == "classic", "the group downgrades")
                await eventually(lambda: split_cleanly(classic), "the classic members split again")
                assert [m.assignment for m in classic] == before  # range, as before the upgrade
                assert all(m.holdings for m in members)
                assert owned_twice(members) == []
