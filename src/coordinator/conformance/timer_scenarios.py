"""Classic rules a timer decides (spec §1.5): the pending-sync timeout, the rebalance timeout of
a join phase, and the leader a join phase without its leader elects.

Registered into `scenario.SCENARIOS` when this module is imported (the runner does). Each
lets only the timer it is about decide: sessions outlast the scenario.
"""

from __future__ import annotations

import asyncio

from coordinator.conformance.assumptions import BASE
from coordinator.conformance.scenario import Context, error_name, expect, scenario


@scenario(
    "sync.timeout_removes_silent_members",
    rule="§1.5 pending sync: members that never send SyncGroup within the rebalance timeout go",
    kafka="the silent follower is removed (UNKNOWN_MEMBER_ID); the leader that synced stays and "
    "hears REBALANCE_IN_PROGRESS",
    assumes=BASE,
)
async def sync_timeout(ctx: Context) -> None:
    # The pending-sync timer fires one rebalance timeout after the join completes; the rebalance
    # it starts times the leader out one more rebalance timeout later: look in between.
    rebalance_ms = ctx.session_ms * 2
    leader, follower = await ctx.joined(2, rebalance_ms)
    synced = await leader.sync({m.member_id: b"" for m in (leader, follower)})
    expect(error_name(synced.error_code), "none", "the leader's SyncGroup")
    await asyncio.sleep(rebalance_ms / 1000 * 1.4)
    expect(error_name(await follower.heartbeat()), "unknown_member_id", "the silent follower")
    expect(error_name(await leader.heartbeat()), "rebalance_in_progress", "the leader")


@scenario(
    "join.rebalance_timeout_removes_absent_members",
    rule="§1.5: a join phase ends after the rebalance timeout without members that did not rejoin",
    kafka="the round completes with the members that rejoined; the absent one is UNKNOWN_MEMBER_ID",
    assumes=BASE,
)
async def rebalance_timeout(ctx: Context) -> None:
    rebalance_ms = 1500  # no broker bounds it; sessions outlast it: only it removes a member
    long_ms = max(ctx.session_ms * 5, rebalance_ms * 3)
    leader, follower = await ctx.joined(2, rebalance_ms, session_ms=long_ms)
    assignments = {m.member_id: b"" for m in (leader, follower)}
    await asyncio.gather(leader.sync(assignments), follower.sync())
    newcomer = await ctx.member()
    await newcomer.join(session_ms=long_ms, rebalance_ms=rebalance_ms)
    waiting = asyncio.ensure_future(newcomer.join(session_ms=long_ms, rebalance_ms=rebalance_ms))
    for _ in range(rebalance_ms // 10):  # the leader rejoins once it sees the round begun
        if error_name(await leader.heartbeat()) != "none":
            break
        await asyncio.sleep(0.01)
    rejoined = await leader.join(session_ms=long_ms, rebalance_ms=rebalance_ms)
    joined = await waiting
    expect(error_name(rejoined.error_code), "none", "the leader's rejoin")
    expect(error_name(joined.error_code), "none", "the newcomer's join")
    expect(rejoined.generation_id, joined.generation_id, "one generation")
    expect(error_name(await follower.heartbeat()), "unknown_member_id", "the absent member")


@scenario(
    "join.leader_reelected",
    rule="§1.5: a join phase that ends without its leader elects one of the members that rejoined",
    kafka="the member that rejoined leads the new generation: its JoinGroup answer names it "
    "leader and carries the member list",
    assumes=BASE,
)
async def leader_reelected(ctx: Context) -> None:
    rebalance_ms = ctx.session_ms
    leader, follower = await ctx.joined(2, rebalance_ms)
    assignments = {m.member_id: b"" for m in (leader, follower)}
    await asyncio.gather(leader.sync(assignments), follower.sync())
    # New protocols start a rebalance; the leader never rejoins, so after the rebalance timeout
    # the round completes without it.
    subscription = b"\x00\x00\x00\x00\x00\x00"
    reply = await follower.join(
        session_ms=max(ctx.session_ms * 5, rebalance_ms * 3),
        rebalance_ms=rebalance_ms,
        protocols=(("roundrobin", subscription), ("range", subscription)),
    )
    expect(error_name(reply.error_code), "none", "the follower's rejoin")
    expect(reply.leader == follower.member_id, True, "the follower leads the new generation")
    expect(len(reply.members), 1, "members handed to the new leader")
