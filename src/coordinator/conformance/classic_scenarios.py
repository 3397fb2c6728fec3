"""The classic group rules as wire scenarios, each naming the rule it checks (`scenario`):
joins (KIP-394 member ids, protocol types, session timeout bounds, the initial delay, the
group's maximum size), syncs, heartbeats, leaves, session expiry, commits fenced by generation
and member, static members (KIP-345, KIP-814), DeleteGroups, ListGroups and explicit offset
retention (KIP-211).

To add a scenario: write the function here with its decorator; the runner, the CLI and the test
suite pick it up.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from coordinator.conformance.assumptions import (
    BASE,
    advertised_at_least,
    setting_at_least,
    setting_at_most,
    version_at_least,
    version_between,
)
from coordinator.conformance.broker import Member
from coordinator.conformance.scenario import Context, emptied, error_name, expect, scenario
from coordinator.wire.api_keys import ApiKey


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
