"""The classic group rules as wire scenarios, each naming the rule it checks.

A scenario is an async function taking a `Context` (the broker, a group id of its own, members on
demand, `expect`), registered with `@scenario(name, rule=..., kafka=..., assumes=...)`. `rule`
points into the group protocol spec (`spec/group-protocol.md` §...), `kafka` says what Kafka does
and from which request version; `assumes` are the conditions on the broker's settings and
versions under which the scenario's expectations hold (unmet: skipped, with the reason).

To add a scenario: write the function here with its decorator; the runner, the CLI and the test
suite pick it up.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator.conformance.broker import BrokerUnderTest, Member
from coordinator.errors import install_hint
from coordinator.wire.api_keys import ApiKey

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


def setting_at_most(key: str, limit: int) -> Assumption:
    def check(broker: BrokerUnderTest) -> str | None:
        value = broker.setting_ms(key)
        if value is None:
            return f"{key} unknown (the broker has no DescribeConfigs: pass --assume {key}=...)"
        return None if value <= limit else f"{key}={value} > {limit}: the scenario would be slow"

    return check


def setting_at_least(key: str, floor: int) -> Assumption:
    def check(broker: BrokerUnderTest) -> str | None:
        value = broker.setting_ms(key)
        if value is None:
            return f"{key} unknown (pass --assume {key}=...)"
        return None if value >= floor else f"{key}={value} < {floor}: nothing to observe"

    return check


#: The shortest offsets cleanup interval a differential run is reliable under: a cleanup deletes
#: a run's empty groups (one forming, between a member's two joins) behind the model's back.
RELIABLE_CLEANUP_MS = 60_000


def no_quick_offsets_cleanup(broker: BrokerUnderTest) -> str | None:
    """A differential run's condition (an unknown setting is taken as Kafka's 10 minutes)."""
    key = "offsets.retention.check.interval.ms"
    value = broker.setting_ms(key)
    if value is None or value >= RELIABLE_CLEANUP_MS:
        return None
    return (
        f"{key}={value} < {RELIABLE_CLEANUP_MS}: the broker's offsets cleanup would delete the "
        "runs' empty groups mid-run, which the model does not do: unreliable"
    )


def version_at_least(api_key: int, version: int) -> Assumption:
    def check(broker: BrokerUnderTest) -> str | None:
        have = broker.versions.get(api_key)
        if have is not None and have >= version:
            return None
        return f"needs api {api_key} v{version}+ (the broker offers {have})"

    return check


def hypothesis_installed(broker: BrokerUnderTest) -> str | None:
    if importlib.util.find_spec("hypothesis") is None:
        return f"needs Hypothesis: {install_hint('conformance')}"
    return None


def advertised_at_least(api_key: int, version: int) -> Assumption:
    """Like `version_at_least`, for versions above the cap the scenarios speak by default."""

    def check(broker: BrokerUnderTest) -> str | None:
        have = broker.advertised.get(api_key)
        if have is not None and have >= version:
            return None
        return f"needs api {api_key} v{version}+ (the broker offers {have})"

    return check


def version_between(api_key: int, low: int, high: int) -> Assumption:
    """The broker speaks some version of `api_key` within [low, high]."""

    def check(broker: BrokerUnderTest) -> str | None:
        oldest, newest = broker.oldest.get(api_key), broker.advertised.get(api_key)
        if oldest is not None and newest is not None and oldest <= high and newest >= low:
            return None
        return f"needs api {api_key} between v{low} and v{high} (the broker has {oldest}-{newest})"

    return check


QUICK_SESSIONS = setting_at_most("group.min.session.timeout.ms", 10_000)
QUICK_DELAY = setting_at_most("group.initial.rebalance.delay.ms", 5_000)
#: KIP-394's two-step join (JoinGroup v4, Kafka 2.2) is what every scenario's members speak.
BASE = (QUICK_SESSIONS, QUICK_DELAY, version_at_least(ApiKey.JOIN_GROUP, 4))


@scenario(
    "join.member_id_required",
    rule="§1.6 step 3 (KIP-394): a new member without an id is given one and must rejoin",
    kafka="JoinGroup v4+: MEMBER_ID_REQUIRED with the member id; the rejoin with it is admitted",
    assumes=BASE,
)
async def member_id_required(ctx: Context) -> None:
    m = await ctx.member()
    first = await m.join(session_ms=ctx.session_ms)
    expect(error_name(first.error_code), "member_id_required", "first JoinGroup")
    expect(bool(first.member_id), True, "a member id handed out")
    second = await m.join(session_ms=ctx.session_ms)
    expect(error_name(second.error_code), "none", "JoinGroup with the handed-out id")
    expect(second.leader, m.member_id, "the only member leads")
    expect(second.generation_id >= 1, True, "a generation formed")


@scenario(
    "join.unknown_member_rejected",
    rule="§1.6: an unknown member id is refused, and the group is untouched",
    kafka="UNKNOWN_MEMBER_ID for a JoinGroup with a member id the group does not know",
    assumes=BASE,
)
async def unknown_member(ctx: Context) -> None:
    (owner,) = await ctx.formed(1)
    stranger = await ctx.member()
    reply = await stranger.join(session_ms=ctx.session_ms, member_id="not-a-member")
    expect(error_name(reply.error_code), "unknown_member_id", "JoinGroup with an unknown id")
    expect(error_name(await owner.heartbeat()), "none", "the member's heartbeat afterwards")


@scenario(
    "join.inconsistent_protocol_type",
    rule="§1.6 (supportsProtocols): a member must share the group's protocol type",
    kafka="INCONSISTENT_GROUP_PROTOCOL for a JoinGroup with another protocol type",
    assumes=BASE,
)
async def inconsistent_protocol(ctx: Context) -> None:
    await ctx.formed(1)
    other = await ctx.member()
    reply = await other.join(session_ms=ctx.session_ms, protocol_type="connect")
    expect(error_name(reply.error_code), "inconsistent_group_protocol", "JoinGroup as connect")


@scenario(
    "join.session_timeout_bounds",
    rule="§1.6 step 1: the session timeout must lie within the group.*.session.timeout.ms",
    kafka="INVALID_SESSION_TIMEOUT below group.min.session.timeout.ms",
    assumes=(*BASE, setting_at_least("group.min.session.timeout.ms", 2)),
)
async def session_timeout_bounds(ctx: Context) -> None:
    m = await ctx.member()
    reply = await m.join(session_ms=ctx.session_ms - 1)
    expect(error_name(reply.error_code), "invalid_session_timeout", "JoinGroup below the min")


@scenario(
    "sync.leader_assignment_relayed",
    rule="§1.5: the leader's SyncGroup assignment is handed to every member",
    kafka="each member's SyncGroup returns the bytes the leader assigned it",
    assumes=BASE,
)
async def assignment_relayed(ctx: Context) -> None:
    members = await ctx.formed(2)
    for m in members:
        reply = await m.sync()
        expect(error_name(reply.error_code), "none", "SyncGroup in a stable group")
        expect(bytes(reply.assignment), m.member_id.encode(), "the assignment the leader gave")
        expect(error_name(await m.heartbeat()), "none", "heartbeat in a stable group")


@scenario(
    "heartbeat.rebalance_in_progress",
    rule="§1.5: a join starts a rebalance; members learn it from their heartbeat and rejoin",
    kafka="REBALANCE_IN_PROGRESS on Heartbeat while the group prepares a rebalance",
    assumes=BASE,
)
async def rebalance_in_progress(ctx: Context) -> None:
    (first,) = await ctx.formed(1)
    newcomer = await ctx.member()
    await newcomer.join(session_ms=ctx.session_ms * 3)  # v4+: the id; older: parks
    waiting = asyncio.ensure_future(newcomer.join(session_ms=ctx.session_ms * 3))
    await asyncio.sleep(0.2)
    expect(error_name(await first.heartbeat()), "rebalance_in_progress", "old member's heartbeat")
    rejoined = await first.join(session_ms=ctx.session_ms * 3)
    joined = await waiting
    expect(error_name(rejoined.error_code), "none", "the old member's rejoin")
    expect(error_name(joined.error_code), "none", "the newcomer's join")
    expect(rejoined.generation_id, joined.generation_id, "one generation for both")
    expect(rejoined.leader, joined.leader, "one leader for both")
    expect(rejoined.leader in (first.member_id, newcomer.member_id), True, "the leader a member")


@scenario(
    "heartbeat.illegal_generation",
    rule="§1.5: requests of an old generation are fenced",
    kafka="ILLEGAL_GENERATION for a Heartbeat with another generation",
    assumes=BASE,
)
async def illegal_generation(ctx: Context) -> None:
    (m,) = await ctx.formed(1)
    expect(error_name(await m.heartbeat(m.generation - 1)), "illegal_generation", "old gen")


@scenario(
    "leave.group_becomes_empty",
    rule="§1.5, §2: a leaving member is removed at once; the last one leaves the group Empty",
    kafka="LeaveGroup NONE; DescribeGroups shows Empty with no members; the old id is unknown",
    assumes=BASE,
)
async def leave_empty(ctx: Context) -> None:
    (m,) = await ctx.formed(1)
    reply = await m.leave()
    expect(error_name(reply.error_code), "none", "LeaveGroup")
    described = await m.describe()
    expect((emptied(described.group_state), len(described.members)), ("Empty", 0), "the group")
    expect(error_name(await m.heartbeat()), "unknown_member_id", "heartbeat of the old id")


@scenario(
    "session.expiry_removes_member",
    rule="§1.5 heartbeat expiry: a member silent for its session timeout is removed",
    kafka="after the session timeout the member is gone (UNKNOWN_MEMBER_ID) and the group Empty",
    assumes=BASE,
)
async def session_expiry(ctx: Context) -> None:
    m = await ctx.member()
    await m.join(session_ms=ctx.session_ms)
    reply = await m.join(session_ms=ctx.session_ms)
    expect(error_name(reply.error_code), "none", "JoinGroup")
    expect(error_name((await m.sync({m.member_id: b""})).error_code), "none", "SyncGroup")
    await asyncio.sleep(ctx.session_ms / 1000 * 1.5 + 0.5)
    expect(error_name(await m.heartbeat()), "unknown_member_id", "heartbeat after the timeout")
    described = await m.describe()
    expect(emptied(described.group_state), "Empty", "the group after the expiry")


@scenario(
    "commit.stale_generation_fenced",
    rule="§3.1: a commit carries the member's generation; an old generation is fenced",
    kafka="OffsetCommit ILLEGAL_GENERATION for the previous generation, NONE for the current",
    assumes=(
        *BASE,
        version_at_least(ApiKey.OFFSET_COMMIT, 1),
        version_at_least(ApiKey.CREATE_TOPICS, 0),
    ),
)
async def stale_commit(ctx: Context) -> None:
    topic = f"{ctx.group_id}-t"
    expect(await ctx.broker.ensure_topic(topic), True, "topic created for the commit")
    (m,) = await ctx.formed(1)
    expect(error_name(await m.commit(topic, 0, 5, m.generation - 1)), "illegal_generation",
           "commit from the previous generation")  # fmt: skip
    expect(error_name(await m.commit(topic, 0, 5, m.generation)), "none", "commit now")


@scenario(
    "commit.unknown_member_fenced",
    rule="§3.1: a commit with a generation must come from a member of it",
    kafka="OffsetCommit UNKNOWN_MEMBER_ID for a member id the group does not know",
    assumes=(
        *BASE,
        version_at_least(ApiKey.OFFSET_COMMIT, 1),
        version_at_least(ApiKey.CREATE_TOPICS, 0),
    ),
)
async def unknown_member_commit(ctx: Context) -> None:
    topic = f"{ctx.group_id}-t"
    expect(await ctx.broker.ensure_topic(topic), True, "topic created for the commit")
    (m,) = await ctx.formed(1)
    real_id, m.member_id = m.member_id, "not-a-member"
    code = await m.commit(topic, 0, 5, m.generation)
    m.member_id = real_id
    expect(error_name(code), "unknown_member_id", "commit from a stranger")


@scenario(
    "static.replacement_fences_old_id",
    rule="§2 (KIP-345): a static member rejoining with its instance id replaces its old id",
    kafka="a new member id for the instance; the old id gets FENCED_INSTANCE_ID",
    assumes=(*BASE, version_at_least(ApiKey.JOIN_GROUP, 5)),
)
async def static_replacement(ctx: Context) -> None:
    old = await ctx.member()
    old.instance_id = f"{ctx.group_id}-instance"
    await old.join_fully(session_ms=ctx.session_ms * 3)
    expect(error_name((await old.sync({old.member_id: b"x"})).error_code), "none", "SyncGroup")
    new = await ctx.member()
    new.instance_id = old.instance_id
    reply = await new.join(session_ms=ctx.session_ms * 3)
    expect(error_name(reply.error_code), "none", "JoinGroup of the restarted instance")
    expect(new.member_id != old.member_id, True, "a new member id")
    expect(error_name(await old.heartbeat()), "fenced_instance_id", "the old id's heartbeat")


async def static_leader_restarted(ctx: Context, version: int) -> tuple[Member, Member, Any]:
    """A stable group of a static leader and a dynamic follower, then the leader restarted: a
    new connection joins with its instance id and no member id at JoinGroup `version`. Returns
    (old leader, restarted leader, the restart's JoinGroup answer)."""
    leader = await ctx.member()
    leader.instance_id = f"{ctx.group_id}-leader"
    await leader.join_fully(session_ms=ctx.session_ms * 3)
    follower = await ctx.member()
    await follower.join(session_ms=ctx.session_ms * 3)  # the id (v4+)
    waiting = asyncio.ensure_future(follower.join(session_ms=ctx.session_ms * 3))
    await asyncio.sleep(0.2)
    rejoined = await leader.join(session_ms=ctx.session_ms * 3)
    await waiting
    expect(rejoined.leader, leader.member_id, "the static member leads")
    assignments = {m.member_id: m.member_id.encode() for m in (leader, follower)}
    await asyncio.gather(leader.sync(assignments), follower.sync())
    restarted = await ctx.member()
    restarted.instance_id = leader.instance_id
    reply = await restarted.join(session_ms=ctx.session_ms * 3, member_id="", version=version)
    return leader, restarted, reply


@scenario(
    "static.leader_restart_skips_assignment",
    rule="§2 (KIP-814): a static leader restarting into a stable group with unchanged protocols "
    "is answered at once, without a rebalance; it leads but must not assign again",
    kafka="JoinGroup v9: NONE, the same generation, leader = its new id, SkipAssignment true, the "
    "member list; the group stays Stable and the old id is FENCED_INSTANCE_ID",
    assumes=(*BASE, advertised_at_least(ApiKey.JOIN_GROUP, 9)),
)
async def static_leader_restart(ctx: Context) -> None:
    old, new, reply = await static_leader_restarted(ctx, 9)
    expect(error_name(reply.error_code), "none", "the restarted leader's JoinGroup")
    expect(reply.generation_id, old.generation, "the generation (no rebalance)")
    expect((reply.leader, reply.skip_assignment), (new.member_id, True), "leader, skip")
    expect(len(reply.members), 2, "the member list the leader gets")
    expect(error_name(await new.heartbeat()), "none", "the new id's heartbeat")
    expect(error_name(await old.heartbeat()), "fenced_instance_id", "the old id's heartbeat")
    expect((await new.describe()).group_state, "Stable", "the group")


@scenario(
    "static.leader_restart_before_v9",
    rule="§2 (KIP-814): before JoinGroup v9 a restarted static leader is told the old leader id, "
    "so it does not assign (it cannot be told to skip)",
    kafka="JoinGroup v5-v8: NONE, the same generation, leader = the old member id, no members",
    assumes=(*BASE, version_at_least(ApiKey.JOIN_GROUP, 5)),
)
async def static_leader_restart_before_v9(ctx: Context) -> None:
    old, _, reply = await static_leader_restarted(
        ctx, min(ctx.broker.versions[ApiKey.JOIN_GROUP], 8)
    )
    expect(error_name(reply.error_code), "none", "the restarted leader's JoinGroup")
    expect(reply.generation_id, old.generation, "the generation (no rebalance)")
    expect((reply.leader, len(reply.members)), (old.member_id, 0), "leader, members")


@scenario(
    "delete.only_empty_groups",
    rule="§5 (DeleteGroups): only an Empty group is deleted",
    kafka="NON_EMPTY_GROUP while it has members; NONE once empty; then DescribeGroups shows Dead",
    assumes=(
        *BASE,
        version_at_least(ApiKey.DELETE_GROUPS, 0),
        version_at_least(ApiKey.DESCRIBE_GROUPS, 0),
    ),
)
async def delete_groups(ctx: Context) -> None:
    (m,) = await ctx.formed(1)
    expect(error_name(await m.delete()), "non_empty_group", "DeleteGroups with a member")
    await m.leave()
    expect(error_name(await m.delete()), "none", "DeleteGroups once empty")
    expect((await m.describe()).group_state, "Dead", "the group after deletion")


@scenario(
    "join.initial_delay",
    rule="§9 rule 1: the first join of an empty group waits group.initial.rebalance.delay.ms",
    kafka="the JoinGroup reply comes no earlier than the initial delay",
    assumes=(*BASE, setting_at_least("group.initial.rebalance.delay.ms", 200)),
)
async def initial_delay(ctx: Context) -> None:
    m = await ctx.member()
    await m.join(session_ms=ctx.session_ms * 3)  # v4+: the id
    started = time.monotonic()
    reply = await m.join(session_ms=ctx.session_ms * 3)
    waited_ms = (time.monotonic() - started) * 1000
    expect(error_name(reply.error_code), "none", "JoinGroup")
    expect(waited_ms >= ctx.initial_delay_ms * 0.9, True,
           f"waited {waited_ms:.0f} ms for a {ctx.initial_delay_ms} ms initial delay")  # fmt: skip


@scenario(
    "list.stable_group_listed",
    rule="§5 (ListGroups): every group of the coordinator is listed with its protocol type",
    kafka="ListGroups lists the group with protocol type consumer (v4+: state Stable)",
    assumes=(*BASE, version_at_least(ApiKey.LIST_GROUPS, 0)),
)
async def list_groups(ctx: Context) -> None:
    (m,) = await ctx.formed(1)
    listed = {g.group_id: g for g in await m.list_groups()}
    expect(ctx.group_id in listed, True, "the group in ListGroups")
    entry = listed[ctx.group_id]
    expect(entry.protocol_type, "consumer", "its protocol type")
    if m.version(ApiKey.LIST_GROUPS) >= 4:
        expect(entry.group_state, "Stable", "its state")


@scenario(
    "join.max_size_refused",
    rule="§1.6 step 2: group.max.size members at the most",
    kafka="GROUP_MAX_SIZE_REACHED for a new member of a full group; the group is untouched",
    assumes=(*BASE, setting_at_most("group.max.size", 5)),
)
async def max_size(ctx: Context) -> None:
    limit = int(ctx.broker.settings["group.max.size"])
    members = await ctx.formed(limit)
    extra = await ctx.member()
    reply = await extra.join(session_ms=ctx.session_ms * 3)
    expect(error_name(reply.error_code), "group_max_size_reached", "the member beyond the max")
    for m in members:
        expect(error_name(await m.heartbeat()), "none", "a member of the full group")


@scenario(
    "differential.lockstep",
    rule="every rule at once (§1.5, §1.6, §2, §3.1, §5, §7): random sequences of JoinGroup, "
    "SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch and DescribeGroups from six "
    "members of two classic groups, and ConsumerGroupHeartbeat from three of a KIP-848 group "
    "(subscribed by name, or by a regex where the broker resolves one at once), "
    "answered as the executable model (the pure core) answers them",
    kafka="the model's answers: error codes, generations, leader (where Kafka's choice is not "
    "free), protocol, member lists, assignments, offsets, group states",
    assumes=(
        hypothesis_installed,
        setting_at_most("group.initial.rebalance.delay.ms", 0),
        no_quick_offsets_cleanup,
        version_at_least(ApiKey.JOIN_GROUP, 4),
        version_at_least(ApiKey.DESCRIBE_GROUPS, 0),
        version_at_least(ApiKey.OFFSET_COMMIT, 2),
        version_at_least(ApiKey.CREATE_TOPICS, 0),
    ),
    timeout_s=None,  # run_differential keeps to its own time budget
)
async def differential(ctx: Context) -> None:
    from coordinator.conformance.differential import run_differential

    report = await asyncio.to_thread(run_differential, ctx.broker, steps=ctx.differential_steps)
    if report.failure is not None:
        raise ScenarioFailed(report.failure)
    expect(report.steps >= ctx.differential_steps, True, f"{report.summary()}: steps made")
    ctx.note = report.summary()


TIMED_STEPS_FRACTION = 40
"""A timed run makes `differential_steps // TIMED_STEPS_FRACTION` steps: its waits cost real time
(10,000 asked: 250 timed steps, about 5-10 s, nearly all of it waiting)."""


@scenario(
    "differential.timed",
    rule="the timers (§1.5 session, §2 rebalance and sync timeouts, §1.6 leader re-election; "
    "§7 KIP-848 session and revocation timeouts): the same random sequences for the two "
    "classic groups with short timeouts (900 ms session, 300 ms rebalance) and waits drawn "
    "below, between and past them, the model's clock moved by the time waited; the KIP-848 "
    "group too where the broker's group.consumer.session.timeout.ms is at most 900 ms (its "
    "members' rebalance timeout 300 ms)",
    kafka="the model's answers after each wait: parked requests the timers released, group "
    "states and members (DescribeGroups; ConsumerGroupDescribe: epochs, members, assignments "
    "and targets after fencing); waits never end near a deadline, and a run whose "
    "real time may have passed a deadline the model's has not is counted inconclusive, not "
    "failed",
    assumes=(
        hypothesis_installed,
        setting_at_most("group.initial.rebalance.delay.ms", 0),
        setting_at_most("group.min.session.timeout.ms", 900),
        no_quick_offsets_cleanup,
        version_at_least(ApiKey.JOIN_GROUP, 4),
        version_at_least(ApiKey.DESCRIBE_GROUPS, 0),
        version_at_least(ApiKey.OFFSET_COMMIT, 2),
        version_at_least(ApiKey.CREATE_TOPICS, 0),
    ),
    timeout_s=None,  # run_differential keeps to its own time budget
)
async def differential_timed(ctx: Context) -> None:
    from coordinator.conformance.differential import run_differential

    steps = max(1, ctx.differential_steps // TIMED_STEPS_FRACTION)
    report = await asyncio.to_thread(
        run_differential, ctx.broker, steps=steps, steps_per_run=25, timed=True
    )
    if report.failure is not None:
        raise ScenarioFailed(report.failure)
    expect(report.steps >= steps, True, f"{report.summary()}: steps made")
    expect(report.inconclusive < report.runs, True, f"{report.summary()}: runs clear of deadlines")
    ctx.note = report.summary()


@scenario(
    "retention.explicit_expiry",
    rule="§3.3 (KIP-211): an OffsetCommit v2-v4 with a retention time expires at commit time + "
    "retention; the periodic check removes the offset, then the group it leaves empty",
    kafka="OffsetFetch -1 for the partition once the retention and a check interval passed; the "
    "simple group is then gone (DescribeGroups Dead)",
    assumes=(
        version_between(ApiKey.OFFSET_COMMIT, 2, 4),
        version_at_least(ApiKey.CREATE_TOPICS, 0),
        version_at_least(ApiKey.DESCRIBE_GROUPS, 0),
        setting_at_most("offsets.retention.check.interval.ms", 5_000),
    ),
)
async def explicit_retention(ctx: Context) -> None:
    topic = f"{ctx.group_id}-t"
    expect(await ctx.broker.ensure_topic(topic), True, "topic created for the commit")
    m = await ctx.member()
    version = min(ctx.broker.advertised[ApiKey.OFFSET_COMMIT], 4)
    retention_ms = 1_000
    committed_at = time.monotonic()
    response = await m.client.request(
        ApiKey.OFFSET_COMMIT,
        version,
        {"group_id": ctx.group_id, "generation_id": -1, "member_id": "",
         "retention_time": retention_ms,
         "topics": [{"name": topic, "partitions": [
             {"partition_index": 0, "committed_offset": 11, "committed_metadata": ""}]}]},
    )  # fmt: skip
    expect(error_name(response.topics[0].partitions[0].error_code), "none", "the commit")
    before = await m.fetch(topic, 0)
    if time.monotonic() - committed_at < retention_ms / 1000:  # else it may rightly be gone
        expect(before, 11, "the offset before it expires")
    check_ms = ctx.broker.setting_ms("offsets.retention.check.interval.ms") or 0
    await asyncio.sleep((retention_ms + check_ms) / 1000 * 1.5 + 0.3)
    expect(await m.fetch(topic, 0), -1, "the offset after its retention")
    expect((await m.describe()).group_state, "Dead", "the group its offsets left empty")
