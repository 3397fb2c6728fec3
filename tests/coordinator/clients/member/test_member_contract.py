"""What docs/member.md promises a service, checked as a service uses `GroupMember`: members in
their own processes (group_member_proc.py) where the promise is about time (a drain longer than
the session, a leave in the middle of a rebalance, a commit loop through rebalances), against
our server in this process.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from coordinator.clients.member import (
    CommitError,
    CommitFailed,
    GroupMember,
    MemberError,
    RebalanceInProgress,
    ResourceGroup,
)
from coordinator.clients.member.resources import ResourceChange
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import RunningServer, running_server
from rebalance.config import CoordinatorConfig
from rebalance.member import Assigned
from rebalance.member.consumer import ConsumerMember

PROC = Path(__file__).with_name("group_member_proc.py")
TOPIC = "jobs"
CONFIG = CoordinatorConfig.from_properties(
    {
        "group.initial.rebalance.delay.ms": "100",
        "group.min.session.timeout.ms": "500",
        "group.consumer.min.session.timeout.ms": "500",
        "group.consumer.session.timeout.ms": "3000",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "500",
    }
)


@asynccontextmanager
async def server(partitions: int) -> AsyncIterator[RunningServer]:
    async with running_server(
        topics=[(TOPIC, partitions)], groups=GroupCoordinatorExtension(CONFIG)
    ) as running:
        yield running


@dataclass
class Proc:
    """A member process and the JSON lines it said."""

    process: asyncio.subprocess.Process
    log: list[dict[str, Any]] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            self.log.append(json.loads(raw))

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        return [line for line in self.log if line["event"] in kinds]

    def holding(self) -> set[tuple[str, int]]:
        held: set[tuple[str, int]] = set()
        for line in self.events("assigned", "revoked", "lost"):
            partitions = {(t, p) for t, p in line["partitions"]}
            held = held | partitions if line["event"] == "assigned" else held - partitions
        return held

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(self.process.wait(), 30)
        if self.reader is not None:
            await self.reader


async def spawn(bootstrap: str, group: str, name: str, *options: str) -> Proc:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(PROC), "--bootstrap", bootstrap, "--group", group,
        "--topic", TOPIC, "--name", name, *options, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    proc = Proc(process)
    proc.reader = asyncio.create_task(proc.read())
    return proc


async def until(condition: Callable[[], object], timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.02)


def all_of(partitions: int) -> set[tuple[str, int]]:
    return {(TOPIC, p) for p in range(partitions)}


# -- a slow on_revoked keeps what the member keeps, and its commit --------------------------


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_a_drain_longer_than_the_session_keeps_the_kept_partition_and_its_commit(
    protocol: str,
) -> None:
    """Session 3 s, rebalance timeout 10 s, `on_revoked` drains 4 s: the member heartbeats
    meanwhile, so it keeps the partition it keeps, still owns the one it gives back until the
    callback returns, and the commit made at the end of the drain is accepted."""
    async with server(2) as running:
        options = ("--protocol", protocol, "--session-ms", "3000", "--rebalance-ms", "10000")
        a = await spawn(running.bootstrap, "drain", "a", *options, "--drain-ms", "4000")
        try:
            await until(lambda: a.holding() == all_of(2))
            b = await spawn(running.bootstrap, "drain", "b", *options)
            try:
                await until(lambda: a.events("revoked") and len(b.holding()) == 1, 30)
                await asyncio.sleep(1.0)  # past the drain: nothing lost afterwards either
                (revoking,) = a.events("revoking")
                (revoked,) = a.events("revoked")
                given = {(t, p) for t, p in revoked["partitions"]}
                assert revoked["t"] - revoking["t"] >= 4.0
                assert {(t, p) for t, p in revoked["owned"]} == all_of(2)  # until it returns
                assert a.events("lost") == []
                assert a.events("commit_failed") == []
                (committed,) = a.events("committed")
                assert committed["offsets"] == [[t, p, 100 + p] for t, p in sorted(given)]
                assert a.holding() == all_of(2) - given and b.holding() == given
                assert len(a.events("assigned")) == 1  # the kept partition never moved
            finally:
                await b.stop()
        finally:
            await a.stop()
        async with GroupMember(running.bootstrap, "drain", [TOPIC]) as reader:
            assert await reader.committed(given) == {tp: 100 + tp[1] for tp in given}


# -- a member leaving in the middle of a cooperative rebalance commits in on_revoked --------


@pytest.mark.parametrize("delay_s", [0.1, 0.2, 0.4])
async def test_a_member_leaving_during_a_cooperative_rebalance_commits_what_it_revokes(
    delay_s: float,
) -> None:
    """A and B stable; C joins; A leaves `delay_s` later, while the rebalance C started is
    under way: A's `on_revoked` commits everything A held, and the coordinator keeps it."""
    async with server(6) as running:
        group = f"leave-{int(delay_s * 1000)}"
        fast = ("--session-ms", "3000", "--heartbeat-ms", "100")
        a = await spawn(running.bootstrap, group, "a", *fast)
        b = await spawn(running.bootstrap, group, "b", *fast)
        try:
            await until(lambda: a.holding() | b.holding() == all_of(6) and b.holding())
            await asyncio.sleep(0.5)
            held = a.holding()
            async with GroupMember(
                running.bootstrap, group, [TOPIC], session_timeout_ms=3000,
                heartbeat_interval_ms=100,
            ) as c:  # fmt: skip
                await asyncio.sleep(delay_s)
                await a.stop()
                failed = a.events("commit_failed")
                assert failed == [], failed
                committed = {(t, p): o for line in a.events("committed")
                             for t, p, o in line["offsets"]}  # fmt: skip
                assert set(committed) >= held
                assert await c.committed(held) == {tp: 100 + tp[1] for tp in held}
        finally:
            await b.stop()


# -- a service committing what it owns every 200 ms lives through rebalances ------------------


async def test_a_commit_loop_lives_through_rebalances_with_retriable_refusals_only() -> None:
    """A commits what owned() lists every 50 ms, as a service does, while members come and go;
    the leader (b) takes 1 s to assign, so A waits between JoinGroup and SyncGroup each time:
    its commits meanwhile are refused as retriable (RebalanceInProgress), never final."""
    async with server(6) as running:
        fast = ("--session-ms", "3000", "--heartbeat-ms", "200")
        b = await spawn(running.bootstrap, "loop", "b", *fast, "--assign-delay-ms", "1000")
        await until(lambda: b.holding() == all_of(6))
        a = await spawn(running.bootstrap, "loop", "a", *fast, "--commit-every-ms", "50")
        try:
            await until(lambda: a.events("committed") and len(a.holding()) == 3)
            for _ in range(2):  # a join and a leave, twice: four rebalances
                async with GroupMember(
                    running.bootstrap, "loop", [TOPIC], session_timeout_ms=3000,
                    heartbeat_interval_ms=200,
                ) as other:  # fmt: skip
                    await other.wait_stable(20)
                await until(lambda: len(a.holding()) == 3)
            settled = len(a.events("committed"))
            await until(lambda: len(a.events("committed")) > settled + 2)
            assert a.process.returncode is None
            failures = a.events("commit_failed")
            assert failures, "the loop never committed during a rebalance"
            final = [
                f for f in failures if f["error"] != "RebalanceInProgress" or not f["retriable"]
            ]
            assert final == [], [(f["code"], f["message"]) for f in final]
            # REBALANCE_IN_PROGRESS, or the coordinator's ILLEGAL_GENERATION for a commit that
            # raced the join completing
            assert {f["code"] for f in failures} <= {"REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"}
        finally:
            await a.stop()
            await b.stop()


# -- what owned() means, at every step ------------------------------------------------------


async def test_owned_lists_a_partition_from_on_assigned_until_on_revoked_returned() -> None:
    seen: list[tuple[str, frozenset[tuple[str, int]], frozenset[tuple[str, int]], str]] = []
    member: GroupMember

    def step(kind: str, partitions: frozenset[tuple[str, int]], when: str) -> None:
        seen.append((kind, partitions, member.owned(), when))

    async def assigned(partitions: frozenset[tuple[str, int]]) -> None:
        step("assigned", partitions, "start")
        await asyncio.sleep(0.2)
        step("assigned", partitions, "end")

    async def revoked(partitions: frozenset[tuple[str, int]]) -> None:
        step("revoked", partitions, "start")
        await asyncio.sleep(0.2)
        step("revoked", partitions, "end")

    def lost(partitions: frozenset[tuple[str, int]]) -> None:
        step("lost", partitions, "start")

    async with server(4) as running:
        member = GroupMember(
            running.bootstrap, "owned", [TOPIC], session_timeout_ms=3000,
            heartbeat_interval_ms=200, on_assigned=assigned, on_revoked=revoked, on_lost=lost,
        )  # fmt: skip
        told: list[tuple[Any, frozenset[tuple[str, int]]]] = []

        async def follow() -> None:  # changes() yields a change once its callback returned
            async for change in member.changes():
                told.append((change, member.owned()))

        follower = asyncio.create_task(follow())
        async with member:
            await member.wait_stable(20)
            async with GroupMember(
                running.bootstrap, "owned", [TOPIC], session_timeout_ms=3000,
                heartbeat_interval_ms=200,
            ) as other:  # fmt: skip
                await until(lambda: len(other.owned()) == 2 and len(member.owned()) == 2)
                after_revoke = member.owned()
            await until(lambda: len(member.owned()) == 4)
        await follower
    for change, owned in told:
        if isinstance(change, Assigned):
            assert change.partitions <= owned
        else:
            assert not (change.partitions & owned), (change, owned)
    assert seen, "no callback ran"
    for kind, partitions, owned, _ in seen:
        assert partitions, f"{kind} called with no partition"
        if kind == "lost":
            assert not (owned & partitions)  # another member may own them already
        else:
            assert partitions <= owned, (kind, partitions, owned)
    revocations = [s for s in seen if s[0] == "revoked"]
    assert revocations and not (revocations[0][1] & after_revoke)  # gone once it returned
    assert [s[0] for s in seen] == ["assigned", "assigned", "revoked", "revoked", "assigned",
                                    "assigned", "revoked", "revoked"]  # fmt: skip


# -- callbacks, committed(), errors -----------------------------------------------------------


async def test_plain_functions_are_callbacks_and_what_cannot_be_called_is_refused_at_once() -> None:
    calls: list[frozenset[tuple[str, int]]] = []
    with pytest.raises(TypeError, match="on_revoked must be a function"):
        GroupMember("127.0.0.1:9092", "g", [TOPIC], on_revoked="stop")  # type: ignore[arg-type]
    async with server(2) as running, GroupMember(
        running.bootstrap, "plain", [TOPIC], session_timeout_ms=3000,
        heartbeat_interval_ms=200, on_assigned=calls.append,
    ) as member:  # fmt: skip
        await member.wait_stable(20)
    assert calls == [frozenset(all_of(2))]


async def test_committed_says_none_for_no_offset_and_refusals_carry_kafka_codes() -> None:
    async with server(2) as running:
        async with GroupMember(
            running.bootstrap, "codes", [TOPIC], session_timeout_ms=3000,
            heartbeat_interval_ms=200,
        ) as member:  # fmt: skip
            await member.wait_stable(20)
            assert await member.committed([(TOPIC, 0)]) == {(TOPIC, 0): None}
            await member.commit({(TOPIC, 0): 0})
            assert await member.committed([(TOPIC, 0)]) == {(TOPIC, 0): 0}
            with pytest.raises(CommitFailed, match="not owned") as foreign:
                await member.commit({("elsewhere", 0): 1})
            assert foreign.value.code is None and not foreign.value.retriable
        with pytest.raises(CommitFailed, match="not owned"):  # left: owns nothing any more
            await member.commit({(TOPIC, 0): 1})
    assert issubclass(RebalanceInProgress, CommitError) and RebalanceInProgress.retriable
    assert issubclass(CommitError, MemberError) and not CommitFailed.retriable


async def test_a_kip_848_member_leases_with_the_coordinators_session_not_its_own() -> None:
    """The member is left at its 45 s default; the coordinator's session is 3 s: the lease
    must use 3 s (a member trusting 45 s stayed an owner 1.28 s past its removal)."""
    async with server(2) as running, GroupMember(running.bootstrap, "session", [TOPIC],
                           group_protocol="consumer") as member:  # fmt: skip
        assert await member.wait_stable(20) == frozenset(all_of(2))
        assert isinstance(member.member, ConsumerMember)
        assert member.member.session_timeout_ms == 3000


def test_heartbeat_interval_is_the_coordinators_under_kip_848() -> None:
    with pytest.raises(ValueError, match=r"group\.consumer\.heartbeat\.interval\.ms"):
        GroupMember("127.0.0.1:9092", "g", [TOPIC], group_protocol="consumer",
                    heartbeat_interval_ms=1000)  # fmt: skip


# -- ResourceGroup offers what GroupMember does, by name -----------------------------------


async def test_a_resource_group_reports_changes_stability_and_failure_by_name() -> None:
    names = [f"tenant-{n}" for n in range(4)]
    async with server(1) as running:
        first = ResourceGroup(running.bootstrap, "tenants", names, session_timeout_ms=3000,
                              heartbeat_interval_ms=200)  # fmt: skip
        changes: list[ResourceChange] = []

        async def follow() -> None:
            async for change in first.changes():
                changes.append(change)

        async with first:
            follower = asyncio.create_task(follow())
            assert await first.wait_stable(20) == frozenset(names)
            assert first.failure is None and first.generation > 0
            async with ResourceGroup(running.bootstrap, "tenants", names, session_timeout_ms=3000,
                                     heartbeat_interval_ms=200) as second:  # fmt: skip
                await until(lambda: len(second.owned()) == 2 and len(first.owned()) == 2)
            await until(lambda: len(first.owned()) == 4)
        await follower
    assert changes[0] == ResourceChange("acquired", frozenset(names))
    assert changes[1].kind == "released" and len(changes[1].resources) == 2
    assert [c.kind for c in changes[2:]] == ["acquired", "released"]
