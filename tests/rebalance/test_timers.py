"""Timer conformance: spec §1.4, §1.5 (heartbeat expiry, pending-sync expiry, complete-join),
§9 rules 3, 6, 9, 18."""

from __future__ import annotations

from rebalance.classic.timers import session_key
from rebalance.config import CoordinatorConfig
from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness

G = "g"


def test_session_expiry_in_stable_removes_member_and_rebalances() -> None:
    """§1.5 heartbeat expiry: a member without heartbeats is removed at S_m; S -> PR; the
    remaining member's rejoin completes the rebalance at once."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    deadline = h.timer.deadline(session_key(G, follower))
    assert deadline is not None
    while h.clock.now_ms() + 5000 < deadline:
        h.advance(5000)
        h.heartbeat(G, leader, generation)
    h.advance(deadline - h.clock.now_ms() - 1)
    group = h.core.group(G)
    assert group is not None and follower in group.members
    h.advance(1)
    assert follower not in group.members
    assert group.kafka_state == "PreparingRebalance"
    assert h.join_reply(h.join(G, leader)).generation_id == generation + 1


def test_session_expiry_of_last_member_empties_group() -> None:
    """§1.5 heartbeat expiry + §9 rule 7: the last member expiring -> Empty, generation + 1."""
    h = GroupHarness()
    _, generation = h.form_group(G, 1)
    h.advance(10_000)
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Empty" and group.generation == generation + 1


def test_heartbeats_keep_members_alive() -> None:
    """§1.4: accepted heartbeats re-arm the session timer."""
    h = GroupHarness()
    members, generation = h.form_group(G, 2)
    for _ in range(20):
        h.advance(9000)
        for member in members:
            assert h.heartbeat(G, member, generation) is ErrorCode.NONE
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "Stable" and len(group.members) == 2


def test_new_member_join_timeout_is_five_minutes_not_session() -> None:
    """§9 rule 18 / §1.5 add-member step 4: a new member with a parked join is evicted after
    300 000 ms, not its session timeout; its join is answered UNKNOWN_MEMBER_ID, memberId ""."""
    h = GroupHarness()
    (leader,), generation = h.form_group(G, 1, rebalance_timeout_ms=600_000)
    start = h.clock.now_ms()
    _, token = h.new_member(G, session_timeout_ms=6000, rebalance_timeout_ms=600_000)
    assert h.reply(token) is None
    while h.clock.now_ms() < start + 295_000:  # the leader stays alive but does not rejoin
        h.advance(5000)
        assert h.heartbeat(G, leader, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.reply(token) is None
    h.advance(start + 299_999 - h.clock.now_ms())
    assert h.reply(token) is None
    h.advance(1)
    reply = h.join_reply(token)
    assert reply.error is ErrorCode.UNKNOWN_MEMBER_ID and reply.member_id == ""


def test_parked_members_are_immune_to_session_expiry() -> None:
    """§1.2 satisfied rule / §9 rule 18: a (not new) member with a parked join does not expire;
    the rebalance timeout then drops the dynamic non-rejoiner (§9 rule 6)."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    token = h.join(G, leader)  # parked, never heartbeats again
    for _ in range(5):  # 25 s, well past the leader's 10 s session
        h.advance(5000)
        h.heartbeat(G, follower, generation)
    group = h.core.group(G)
    assert group is not None
    assert leader in group.members and h.reply(token) is None
    h.advance(5000)  # R = 30 s after the leader's join
    reply = h.join_reply(token)
    assert reply.generation_id == generation + 1
    assert set(group.members) == {leader}


def test_pending_member_expires_after_its_session_timeout() -> None:
    """§9 rule 3 / §1.4 pending-member timer: a MEMBER_ID_REQUIRED id blocks completion until
    the session timeout of that first request fires; then the join completes."""
    h = GroupHarness()
    (leader,), generation = h.form_group(G, 1)
    start = h.clock.now_ms()
    pending = h.join_reply(h.join(G, session_timeout_ms=7000)).member_id
    lt = h.join(G, leader)
    h.advance(6999)
    assert h.reply(lt) is None
    h.advance(1)
    assert h.clock.now_ms() == start + 7000
    assert h.join_reply(lt).generation_id == generation + 1
    assert h.join_reply(h.join(G, pending)).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_pending_member_expiry_in_stable_changes_nothing() -> None:
    """§1.11 Pending member expiry in Stable: removed, group unchanged."""
    h = GroupHarness()
    (leader,), generation = h.form_group(G, 1)
    pending = h.join_reply(h.join(G, session_timeout_ms=6000)).member_id
    h.advance(6000)
    group = h.core.group(G)
    assert group is not None
    assert pending not in group.pending_join
    assert group.kafka_state == "Stable" and group.generation == generation
    assert h.heartbeat(G, leader, generation) is ErrorCode.NONE


def test_rebalance_timeout_is_max_over_members() -> None:
    """§0 conventions: R = max over members of rebalanceTimeoutMs, evaluated when armed."""
    h = GroupHarness()
    t1 = h.join(G, version=3, rebalance_timeout_ms=20_000)
    t2 = h.join(G, version=3, rebalance_timeout_ms=40_000)
    h.run_until(lambda: h.reply(t1) is not None)
    r1, r2 = h.join_reply(t1), h.join_reply(t2)
    follower = r2.member_id if r1.member_id == r1.leader else r1.member_id
    h.sync(G, r1.leader, r1.generation_id, {})
    h.sync(G, follower, r1.generation_id)
    token = h.join(G, r1.leader)  # the follower never rejoins (but heartbeats)
    start = h.clock.now_ms()
    while h.clock.now_ms() < start + 35_000:
        h.advance(5000)
        h.heartbeat(G, follower, r1.generation_id)
    assert h.reply(token) is None  # 35 s > 20 s: the timeout is 40 s
    h.advance(5000)
    assert h.join_reply(token).generation_id == r1.generation_id + 1


def test_pending_sync_expiry_evicts_non_syncers_after_stable() -> None:
    """§9 rule 9 / §1.5 pending-sync expiry: members that got the join response but sent no
    SyncGroup within R are evicted even after the leader made the group Stable; a new
    rebalance starts."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(3)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    leader = replies[0].leader
    generation = replies[0].generation_id
    others = [r.member_id for r in replies if r.member_id != leader]
    synced, silent = others
    h.sync(G, leader, generation, {})
    h.sync(G, synced, generation)
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "Stable"
    for _ in range(5):
        h.advance(5000)
        for member in (leader, synced, silent):
            h.heartbeat(G, member, generation)
    assert silent in group.members
    h.advance(5000)  # R = 30 s after the join completed
    assert silent not in group.members
    assert group.kafka_state == "PreparingRebalance"


def test_pending_sync_expiry_in_completing_rebalance() -> None:
    """§1.5 pending-sync expiry in CR: the non-syncing leader is removed, parked follower syncs
    are answered REBALANCE_IN_PROGRESS by the new rebalance."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(2)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    leader = replies[0].leader
    follower = next(r.member_id for r in replies if r.member_id != leader)
    generation = replies[0].generation_id
    sync = h.sync(G, follower, generation)
    for _ in range(5):  # both stay alive; the leader just never syncs
        h.advance(5000)
        h.heartbeat(G, leader, generation)
        h.heartbeat(G, follower, generation)
    assert h.reply(sync) is None
    h.advance(5000)  # R = 30 s after the join completed
    assert h.sync_reply(sync).error is ErrorCode.REBALANCE_IN_PROGRESS
    group = h.core.group(G)
    assert group is not None
    assert set(group.members) == {follower}
    assert group.kafka_state == "PreparingRebalance"


def test_everyone_synced_makes_pending_sync_timer_harmless() -> None:
    """§1.5 pending-sync expiry: if everyone synced, the expiry changes nothing."""
    h = GroupHarness()
    members, generation = h.form_group(G, 2)
    for _ in range(8):
        h.advance(5000)
        for member in members:
            h.heartbeat(G, member, generation)
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "Stable"
    assert group.generation == generation


def test_session_expiry_in_initial_rebalance_completes_join_at_once() -> None:
    """§1.5 heartbeat expiry / §8.1: the new coordinator completes the join as soon as an
    expiry leaves every remaining member joined, even during the initial rebalance."""
    h = GroupHarness(CoordinatorConfig(group_initial_rebalance_delay_ms=400_000))
    first = h.join(G, version=3, rebalance_timeout_ms=400_000)
    h.advance(100_000)
    second = h.join(G, version=3, rebalance_timeout_ms=400_000)
    h.advance(199_999)
    assert h.reply(second) is None
    h.advance(1)  # t=300 s: the first member's new-member join timeout
    assert h.join_reply(first).error is ErrorCode.UNKNOWN_MEMBER_ID
    reply = h.join_reply(second)
    assert reply.error is ErrorCode.NONE and reply.generation_id == 1
