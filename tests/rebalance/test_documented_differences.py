"""Our documented deviations from Kafka (`DIFFERS` in rebalance/classic/): test our behaviour."""

from __future__ import annotations

from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness

G = "g"


def test_superseded_parked_join_is_answered_rebalance_in_progress() -> None:
    """DIFFERS (§9 rule 17): a duplicate JoinGroup replaces the parked one (Kafka); the
    superseded request is answered REBALANCE_IN_PROGRESS (Kafka never answers it)."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    first = h.join(G, leader)
    second = h.join(G, leader)
    assert h.join_reply(first).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.reply(second) is None
    group = h.core.group(G)
    assert group is not None and group.num_awaiting_join == 1
    h.join(G, follower)
    assert h.join_reply(second).generation_id == generation + 1


def test_member_removed_with_parked_sync_gets_unknown_member() -> None:
    """DIFFERS: a member removed while its SyncGroup is parked gets UNKNOWN_MEMBER_ID for it
    (Kafka drops the future); the others' parked syncs get REBALANCE_IN_PROGRESS."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(3)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    leader = replies[0].leader
    f1, f2 = [r.member_id for r in replies if r.member_id != leader]
    generation = replies[0].generation_id
    s1 = h.sync(G, f1, generation)
    s2 = h.sync(G, f2, generation)
    h.leave(G, f1)
    assert h.sync_reply(s1).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync_reply(s2).error is ErrorCode.REBALANCE_IN_PROGRESS


def test_protocol_vote_tie_goes_to_first_vote_in_join_order() -> None:
    """DIFFERS (§1.5 select-protocol ties are hash-map order in Kafka): a tie goes to the
    protocol that received a vote first, members in join order."""
    for first, second in ((("a", b""), ("b", b"")), (("b", b""), ("a", b""))):
        h = GroupHarness()
        t1 = h.join(G, version=3, protocols=(first, second))
        t2 = h.join(G, version=3, protocols=(second, first))
        h.run_until(lambda: h.reply(t1) is not None)  # noqa: B023 - evaluated in-loop
        assert h.join_reply(t1).protocol_name == first[0]
        assert h.join_reply(t2).protocol_name == first[0]


def test_new_leader_drawn_from_injected_random_source() -> None:
    """DIFFERS: when the leader leaves, the new leader is drawn from the injected random
    source: always a remaining member, and the same one for the same seed."""

    def successor(seed: int) -> int:
        h = GroupHarness(seed=seed)
        members, _ = h.form_group(G, 4)
        h.leave(G, members[0])
        group = h.core.group(G)
        assert group is not None and group.leader_id in members[1:]
        return members.index(group.leader_id)

    assert successor(7) == successor(7)


def test_static_replacement_takes_over_pending_sync_place() -> None:
    """DIFFERS: a static member replacing itself in Stable takes over its old id's place in
    the pending-sync set, so the new id must sync within R (§9 rule 9) — and syncing clears
    it."""
    h = GroupHarness()
    ta = h.join(G, instance_id="a")
    tb = h.join(G, instance_id="b")
    h.run_until(lambda: h.reply(ta) is not None and h.reply(tb) is not None)
    ra, rb = h.join_reply(ta), h.join_reply(tb)
    leader = ra if ra.member_id == ra.leader else rb
    follower = rb if leader is ra else ra
    generation = leader.generation_id
    leader_instance = leader.member_id.split("-", 1)[0]
    follower_instance = follower.member_id.split("-", 1)[0]
    h.sync(G, leader.member_id, generation, {}, instance_id=leader_instance)
    new = h.join_reply(h.join(G, instance_id=follower_instance))
    group = h.core.group(G)
    assert group is not None
    assert new.member_id in group.pending_sync and follower.member_id not in group.pending_sync
    h.sync(G, new.member_id, generation, instance_id=follower_instance)
    assert not group.pending_sync
    for _ in range(8):
        h.advance(5000)
        h.heartbeat(G, leader.member_id, generation, leader_instance)
        h.heartbeat(G, new.member_id, generation, follower_instance)
    assert group.kafka_state == "Stable" and len(group.members) == 2
