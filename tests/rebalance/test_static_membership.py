"""Static membership (KIP-345) conformance: spec §2, §9 rules 4, 5, 6, 14."""

from __future__ import annotations

from rebalance.classic.records import GroupMetadataRecord
from rebalance.config import CoordinatorConfig
from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness

G = "g"


def _static_group(h: GroupHarness, *instances: str) -> tuple[dict[str, str], str, int]:
    """Form a group of static members; returns (instance -> member id, leader, generation)."""
    members, generation = h.form_group(G, 0, instance_ids=instances)
    by_instance = {m.split("-", 1)[0]: m for m in members}
    return by_instance, members[0], generation


def test_new_static_member_never_gets_member_id_required() -> None:
    """§2 / §9 rule 4: a new static member is added directly at any version; its id is
    instanceId + "-" + uuid."""
    h = GroupHarness()
    token = h.join(G, instance_id="i1", version=9)
    assert h.reply(token) is None
    group = h.core.group(G)
    assert group is not None
    (member_id,) = group.members
    assert member_id.startswith("i1-")
    assert group.static_members == {"i1": member_id}


def test_static_restart_in_stable_replaces_without_rebalance() -> None:
    """§2 Replacement, Stable, same selected protocol: no rebalance; a new member id with the
    old assignment; the current generation is returned; the old id is fenced."""
    h = GroupHarness()
    by_instance, leader, generation = _static_group(h, "a", "b")
    follower_instance = next(i for i, m in by_instance.items() if m != leader)
    old = by_instance[follower_instance]
    reply = h.join_reply(h.join(G, instance_id=follower_instance))
    assert reply.error is ErrorCode.NONE
    assert reply.generation_id == generation
    assert reply.member_id != old and reply.member_id.startswith(follower_instance + "-")
    assert reply.leader == leader
    assert reply.members == () and reply.skip_assignment is False
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Stable" and group.generation == generation
    assert group.static_members[follower_instance] == reply.member_id
    assert old not in group.members
    # The new id inherits the old assignment (form_group assigns each member its own id).
    sync = h.sync_reply(h.sync(G, reply.member_id, generation, instance_id=follower_instance))
    assert sync.assignment == old.encode()
    # The old incarnation is fenced.
    assert h.heartbeat(G, old, generation, follower_instance) is ErrorCode.FENCED_INSTANCE_ID
    # The replacement is persisted (§2: persist GroupMetadata with current assignments).
    last = [r for r in h.records if isinstance(r, GroupMetadataRecord)][-1]
    assert last.value is not None
    assert {m.member_id for m in last.value.members} == {leader, reply.member_id}


def test_every_static_rejoin_gets_a_different_member_id() -> None:
    """§1.2: a new id is generated on every unknown-id join, including every static rejoin."""
    h = GroupHarness()
    _static_group(h, "a")
    first = h.join_reply(h.join(G, instance_id="a")).member_id
    second = h.join_reply(h.join(G, instance_id="a")).member_id
    assert first != second


def test_replaced_leader_v9_gets_skip_assignment_and_member_list() -> None:
    """§2 / §9 rule 4 (KIP-814): v9+ a replaced leader gets Leader = its new id,
    SkipAssignment = true and the full member list."""
    h = GroupHarness()
    by_instance, leader, generation = _static_group(h, "a", "b")
    leader_instance = next(i for i, m in by_instance.items() if m == leader)
    reply = h.join_reply(h.join(G, instance_id=leader_instance, version=9))
    assert reply.error is ErrorCode.NONE
    assert reply.leader == reply.member_id
    assert reply.skip_assignment is True
    assert {m.member_id for m in reply.members} == {reply.member_id, *by_instance.values()} - {
        leader
    }
    assert {m.group_instance_id for m in reply.members} == {"a", "b"}
    group = h.core.group(G)
    assert group is not None and group.leader_id == reply.member_id
    assert group.kafka_state == "Stable" and group.generation == generation


def test_replaced_leader_below_v9_sees_old_leader_id() -> None:
    """§2 / §9 rule 4: below v9 the reply's Leader is the leader id captured before the
    replacement, so the replaced leader does not run the assignor; no member list."""
    h = GroupHarness()
    by_instance, leader, _ = _static_group(h, "a", "b")
    leader_instance = next(i for i, m in by_instance.items() if m == leader)
    reply = h.join_reply(h.join(G, instance_id=leader_instance, version=8))
    assert reply.error is ErrorCode.NONE
    assert reply.leader == leader != reply.member_id
    assert reply.members == () and reply.skip_assignment is False
    group = h.core.group(G)
    assert group is not None and group.leader_id == reply.member_id


def test_replacement_fences_old_parked_join() -> None:
    """§2 step 1 / §9 rule 4: the old member's parked join -> FENCED_INSTANCE_ID with
    memberId = old id; in PR the new one stays parked (maybe-complete-join)."""
    h = GroupHarness()
    by_instance, leader, generation = _static_group(h, "a", "b")
    other = next(i for i, m in by_instance.items() if m != leader)
    old_join = h.join(G, by_instance[other], instance_id=other, protocols=(("range", b"v2"),))
    assert h.reply(old_join) is None  # PR: waiting for the leader
    new_join = h.join(G, instance_id=other, protocols=(("range", b"v2"),))
    fenced = h.join_reply(old_join)
    assert fenced.error is ErrorCode.FENCED_INSTANCE_ID
    assert fenced.member_id == by_instance[other]
    assert fenced.generation_id == -1 and fenced.leader == ""
    assert h.reply(new_join) is None
    lt = h.join(G, leader, instance_id=next(i for i, m in by_instance.items() if m == leader))
    assert h.join_reply(lt).generation_id == generation + 1
    assert h.join_reply(new_join).generation_id == generation + 1


def test_replacement_fences_old_parked_sync_and_rebalances_in_completing() -> None:
    """§2 step 1 and state CR: the old parked sync -> FENCED_INSTANCE_ID; a replacement in
    CompletingRebalance always rebalances."""
    h = GroupHarness()
    ta = h.join(G, instance_id="a")
    tb = h.join(G, instance_id="b")
    h.run_until(lambda: h.reply(ta) is not None and h.reply(tb) is not None)
    ra, rb = h.join_reply(ta), h.join_reply(tb)
    follower = ra if ra.member_id != ra.leader else rb
    instance = follower.member_id.split("-", 1)[0]
    sync = h.sync(G, follower.member_id, follower.generation_id, instance_id=instance)
    assert h.reply(sync) is None
    h.join(G, instance_id=instance)
    assert h.sync_reply(sync).error is ErrorCode.FENCED_INSTANCE_ID
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "PreparingRebalance"


def test_replacement_in_stable_with_changed_protocol_rebalances() -> None:
    """§2 Stable: if the selected protocol would change, the replacement rebalances."""
    h = GroupHarness()
    by_instance, _, _ = _static_group(h, "a")
    token = h.join(G, instance_id="a", protocols=(("roundrobin", b""), ("range", b"meta")))
    group = h.core.group(G)
    assert group is not None
    # Sole member: the rebalance completes at once with the new protocol (§9 rule 2).
    reply = h.join_reply(token)
    assert reply.protocol_name == "roundrobin"
    assert reply.member_id != by_instance["a"]
    assert group.kafka_state == "CompletingRebalance"


def test_static_members_kept_at_rebalance_timeout() -> None:
    """§9 rule 6 / §1.5 complete-join step 2: the rebalance timeout evicts only dynamic
    non-rejoiners; a static non-rejoiner stays (old metadata), is listed to the leader and
    joins pendingSync."""
    h = GroupHarness()
    members, generation = h.form_group(G, 2, instance_ids=["s"])
    static = next(m for m in members if m.startswith("s-"))
    dynamic = [m for m in members if m != static]
    rejoiner, quitter = dynamic
    token = h.join(G, rejoiner, protocols=(("range", b"v2"),))  # a change: rebalance
    assert h.reply(token) is None
    for _ in range(6):  # stay alive (heartbeats) but do not rejoin until R = 30 s passes
        h.advance(5000)
        h.heartbeat(G, static, generation, "s")
        h.heartbeat(G, quitter, generation)
    reply = h.join_reply(token)
    assert reply.generation_id == generation + 1
    group = h.core.group(G)
    assert group is not None
    assert set(group.members) == {rejoiner, static}
    assert reply.leader == rejoiner
    assert {m.member_id for m in reply.members} == {rejoiner, static}
    assert static in group.pending_sync


def test_only_static_non_rejoiners_keep_group_in_preparing_rebalance() -> None:
    """§2 / §9 rule 6: if only non-rejoined static members remain, the join timer is re-armed
    and the group stays in PR until their sessions expire; then Empty with generation + 1."""
    h = GroupHarness()
    ta = h.join(G, instance_id="a", session_timeout_ms=100_000, rebalance_timeout_ms=20_000)
    tb = h.join(G, instance_id="b", session_timeout_ms=100_000, rebalance_timeout_ms=20_000)
    h.run_until(lambda: h.reply(ta) is not None and h.reply(tb) is not None)
    ra = h.join_reply(ta)
    generation = ra.generation_id
    for token in (ta, tb):
        r = h.join_reply(token)
        h.sync(G, r.member_id, generation, {}, instance_id=r.member_id.split("-", 1)[0])
    h.leave(G, ra.member_id)
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "PreparingRebalance"
    h.advance(60_000)  # three rebalance timeouts: still stuck
    assert group.kafka_state == "PreparingRebalance"
    assert group.generation == generation
    h.advance(40_000)  # b's session (armed at the sync, t=3 s) expires at t=103 s
    assert group.kafka_state == "Empty"
    assert group.generation == generation + 1


def test_max_size_checked_before_static_lookup() -> None:
    """§2 / §9 rule 5: the max-size check runs with memberId "" before the instance lookup: a
    static restart into a full Stable group -> GROUP_MAX_SIZE_REACHED, no replacement."""
    h = GroupHarness(CoordinatorConfig(group_max_size=2))
    by_instance, _, generation = _static_group(h, "a", "b")
    reply = h.join_reply(h.join(G, instance_id="a"))
    assert reply.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert reply.member_id == ""
    group = h.core.group(G)
    assert group is not None
    assert group.static_members["a"] == by_instance["a"]
    assert group.generation == generation


def test_known_member_with_instance_validation() -> None:
    """§1.6 step 4 / §9 rule 14: unknown instance id -> UNKNOWN_MEMBER_ID; instance mapped to
    another member id -> FENCED_INSTANCE_ID."""
    h = GroupHarness()
    by_instance, _, _ = _static_group(h, "a", "b")
    assert h.join_reply(h.join(G, by_instance["a"], instance_id="zzz")).error is (
        ErrorCode.UNKNOWN_MEMBER_ID
    )
    assert h.join_reply(h.join(G, by_instance["a"], instance_id="b")).error is (
        ErrorCode.FENCED_INSTANCE_ID
    )
