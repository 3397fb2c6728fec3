"""A narrated walk through the group lifecycle, driven through the pure core on a manual clock.

It shows, in order: placement of the group on a `__consumer_offsets` partition; three consumers
joining (KIP-394 member ids, the initial rebalance delay, leader election, protocol vote); the
leader's assignment relayed through SyncGroup; heartbeats; a consumer that stops heartbeating
and is expired; the rebalance that follows; a commit from the old generation being fenced; a
clean leave; and finally a coordinator restart that rebuilds the group by replaying its records.
Nothing here sleeps: time advances only on the manual clock, so the demo finishes at once.
"""

from __future__ import annotations

from collections.abc import Callable

from rebalance import CoordinatorConfig, ErrorCode, GroupCoordinatorCore, SplitMix64, partition_for
from rebalance.records import Record
from rebalance.testing import GroupHarness

GROUP = "orders-app"
TOPIC = "orders"
PARTITIONS = 6


def _round_robin(members: list[str]) -> dict[str, bytes]:
    """The leader's job in this demo: partitions dealt round-robin, listed as text."""
    owned: dict[str, list[int]] = {m: [] for m in members}
    for p in range(PARTITIONS):
        owned[members[p % len(members)]].append(p)
    return {m: ",".join(map(str, ps)).encode() for m, ps in owned.items()}


def run_walkthrough(say: Callable[[str], None] = print) -> int:
    config = CoordinatorConfig.from_properties({"group.initial.rebalance.delay.ms": "3000"})
    h = GroupHarness(config=config, seed=2026)

    def state() -> str:
        group = h.core.group(GROUP)
        assert group is not None
        return f"{group.kafka_state} ({group.state.name}), generation {group.generation}"

    def short(member_id: str) -> str:
        return member_id[:12]

    say(f"group {GROUP!r} lives on __consumer_offsets partition {partition_for(GROUP)}")
    say(f"\n[t={h.clock.now_ms()} ms] three consumers join (JoinGroup v9)")
    tokens = {}
    for name in ("alice", "bob", "carol"):
        member_id, token = h.new_member(GROUP, client_id=name, session_timeout_ms=10_000)
        tokens[member_id] = token
        say(f"  {name}: MEMBER_ID_REQUIRED -> rejoins as {short(member_id)}…, parked")
    say(f"  group is {state()}: the initial rebalance delay holds the joins")
    h.run_until(lambda: all(t in h.replies for t in tokens.values()))
    replies = {m: h.join_reply(t) for m, t in tokens.items()}
    leader = next(iter(replies.values())).leader
    generation = replies[leader].generation_id
    say(f"[t={h.clock.now_ms()} ms] join completes: {state()}")
    say(f"  leader {short(leader)}… received the member list ({len(replies[leader].members)})")
    assignment = _round_robin(list(replies))
    followers = [m for m in replies if m != leader]
    parked = [h.sync(GROUP, m, generation) for m in followers]
    say(f"  followers' SyncGroups parked: {sum(h.reply(t) is None for t in parked)}")
    h.sync(GROUP, leader, generation, assignment)
    for member_id in replies:
        say(f"  {short(member_id)}… owns partitions {assignment[member_id].decode()}")
    say(f"  SyncGroup relayed the leader's assignment: {state()}")

    members = list(replies)
    crashed = members[-1]
    survivors = members[:-1]
    say(f"\n[t={h.clock.now_ms()} ms] {short(crashed)}… crashes: no more heartbeats")
    for _ in range(4):
        h.advance(3_000)
        for m in survivors:
            code = h.heartbeat(GROUP, m, generation)
            if code is not ErrorCode.NONE:
                say(f"[t={h.clock.now_ms()} ms] heartbeat of {short(m)}… -> {code.name}")
    say(f"  session expired; group is {state()}")
    rejoins = {m: h.join(GROUP, m) for m in survivors}
    new_generation = h.join_reply(rejoins[survivors[0]]).generation_id
    new_leader = h.join_reply(rejoins[survivors[0]]).leader
    say(f"  survivors rejoin; the rebalance completes at once: {state()}")
    assignment = _round_robin(survivors)
    for m in survivors:
        h.sync(GROUP, m, new_generation, assignment if m == new_leader else None)
    say(
        f"  {state()}; owners now: "
        + ", ".join(f"{short(m)}…={assignment[m].decode()}" for m in survivors)
    )

    stale = h.commit(GROUP, {(TOPIC, 0): 100}, member_id=survivors[0], generation=generation)
    say(f"\ncommit from generation {generation} (stale) -> {stale[(TOPIC, 0)].name}")
    fresh = h.commit(GROUP, {(TOPIC, 0): 100}, member_id=survivors[0], generation=new_generation)
    say(f"commit from generation {new_generation} -> {fresh[(TOPIC, 0)].name}")

    h.leave(GROUP, survivors[1])
    say(f"\n{short(survivors[1])}… leaves: {state()}")
    h.leave(GROUP, survivors[0])
    say(f"{short(survivors[0])}… leaves too: {state()}")

    say("\ncoordinator restart: replaying the records it persisted")
    restarted = GroupCoordinatorCore(config, SplitMix64(1))
    partition = restarted.partition_for(GROUP)
    records: list[Record] = [r for r in h.records if r.group_id == GROUP]
    restarted.load(partition, records, h.clock.now_ms())
    group = restarted.group(GROUP)
    assert group is not None
    offsets = {f"{t}-{p}": o.offset for (t, p), o in group.offsets.items()}
    say(
        f"  {len(records)} records -> {group.kafka_state}, generation {group.generation}, "
        f"offsets {offsets}"
    )
    live = h.core.group(GROUP)
    assert live is not None and live.generation == group.generation
    return 0
