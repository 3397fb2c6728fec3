"""What a conformance scenario is and what it is written with.

A scenario is an async function taking a `Context` (the broker, a group id of its own, members on
demand, `expect`), registered with `@scenario(name, rule=..., kafka=..., assumes=...)` into
`SCENARIOS`. `rule` points into the group protocol spec (`spec/group-protocol.md` §...), `kafka`
says what Kafka does and from which request version; `assumes` are the conditions on the broker's
settings and versions under which the scenario's expectations hold (`assumptions`; unmet:
skipped, with the reason). The rules themselves are in `classic_scenarios`, `timer_scenarios`,
`consumer_scenarios` and `differential_scenarios`, registered as the runner imports them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator.conformance.broker import BrokerUnderTest, Member

#: A condition on the broker: the reason it does not hold, or None.
Assumption = Callable[[BrokerUnderTest], str | None]


class ScenarioFailed(AssertionError):
    """The broker answered differently from Kafka."""


@dataclass
class Context:
    broker: BrokerUnderTest
    group_id: str
    members: list[Member] = field(default_factory=list)
    #: How many steps the differential run makes (`--differential-steps`).
    differential_steps: int = 10_000
    #: What a passing scenario reports (its figures), shown after its name.
    note: str = ""

    async def member(self) -> Member:
        joined = await self.broker.member(self.group_id)
        self.members.append(joined)
        return joined

    @property
    def session_ms(self) -> int:
        """The shortest session timeout the broker accepts: timeouts fire soon."""
        return self.broker.setting_ms("group.min.session.timeout.ms") or 6000

    @property
    def initial_delay_ms(self) -> int:
        return self.broker.setting_ms("group.initial.rebalance.delay.ms") or 0

    async def formed(self, count: int) -> list[Member]:
        """`count` members joined (in one generation) and synced; the leader first."""
        members = await self.joined(count, self.session_ms * 3, session_ms=self.session_ms * 3)
        leader = members[0]
        syncs = [leader.sync({m.member_id: m.member_id.encode() for m in members})]
        syncs += [m.sync() for m in members[1:]]
        for reply in await asyncio.gather(*syncs):
            expect(reply.error_code.name, "none", "SyncGroup of a forming group")
        return members

    async def joined(
        self, count: int, rebalance_ms: int, *, session_ms: int | None = None
    ) -> list[Member]:
        """`count` members through one join round (not synced), with a long session and the given
        rebalance timeout; the leader first."""
        members = [await self.member() for _ in range(count)]
        if session_ms is None:
            session_ms = max(self.session_ms * 5, rebalance_ms * 3)
        for m in members:  # the id the coordinator hands out first (v4+)
            await m.join(session_ms=session_ms, rebalance_ms=rebalance_ms)
        leader = await one_generation(
            members, lambda m: m.join(session_ms=session_ms, rebalance_ms=rebalance_ms)
        )
        return sorted(members, key=lambda m: m.member_id != leader)

    async def close(self) -> None:
        for m in self.members:
            await m.close()


async def one_generation(members: list[Member], join: Callable[[Member], Awaitable[Any]]) -> str:
    """Join `members` until one generation holds them all; the leader's member id.

    A join round may end before every member's JoinGroup arrived (Kafka: an empty group's first
    round ends when `group.initial.rebalance.delay.ms` passes, at 0 as soon as its timer runs;
    a member id handed out but not joined does not hold it). A later member's join then starts
    a new round that waits for those answered to join again, as real consumers do: here they
    rejoin as soon as the leader's answer shows the generation lacks members."""
    pending = {id(m): (m, asyncio.ensure_future(join(m))) for m in members}
    answered: dict[int, tuple[Member, Any]] = {}
    try:
        while True:
            await asyncio.wait([f for _, f in pending.values()], return_when="FIRST_COMPLETED")
            for key, (m, done) in list(pending.items()):
                if done.done():
                    del pending[key]
                    reply = done.result()
                    expect(error_name(reply.error_code), "none", "JoinGroup of a forming group")
                    answered[key] = (m, reply)
            newest = max(r.generation_id for _, r in answered.values())
            leaders = [r for _, r in answered.values() if r.generation_id == newest and r.members]
            if not leaders:
                continue  # the leader's answer of this generation is yet to be read
            if len(leaders[0].members) == len(members):
                if not pending and all(r.generation_id == newest for _, r in answered.values()):
                    return str(leaders[0].leader)
                continue
            for key, (m, reply) in list(answered.items()):  # a generation without everyone
                if reply.generation_id == newest:
                    del answered[key]
                    pending[key] = (m, asyncio.ensure_future(join(m)))
    finally:
        for _, waiting in pending.values():
            waiting.cancel()


def expect(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        raise ScenarioFailed(f"{what}: expected {expected!r}, got {actual!r}")


def emptied(state: str) -> str:
    """A group left without members is Empty, or Dead once the offsets cleanup (every
    offsets.retention.check.interval.ms) has deleted it for having no offsets either: both are
    Kafka's answer for an emptied group."""
    return "Empty" if state == "Dead" else state


def error_name(code: Any) -> str:
    return str(code.name)


@dataclass(frozen=True)
class Scenario:
    name: str
    rule: str
    kafka: str
    assumes: tuple[Assumption, ...]
    run: Callable[[Context], Awaitable[None]]
    #: The runner's limit on it (None: the scenario keeps its own budget).
    timeout_s: float | None = 60.0


SCENARIOS: list[Scenario] = []


def scenario(
    name: str,
    *,
    rule: str,
    kafka: str,
    assumes: tuple[Assumption, ...] = (),
    timeout_s: float | None = 60.0,
) -> Callable[[Callable[[Context], Awaitable[None]]], Callable[[Context], Awaitable[None]]]:
    def register(run: Callable[[Context], Awaitable[None]]) -> Callable[[Context], Awaitable[None]]:
        SCENARIOS.append(Scenario(name, rule, kafka, assumes, run, timeout_s))
        return run

    return register
