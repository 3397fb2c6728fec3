"""JoinGroup conformance: spec §1.5 (procedures), §1.6 (decision procedure), §1.7 (reply), §9."""

from __future__ import annotations

import pytest

from rebalance.config import CoordinatorConfig
from rebalance.errors import ErrorCode
from rebalance.lifecycle import GroupState
from rebalance.testing import GroupHarness

G = "g"


def _group_state(h: GroupHarness, group_id: str = G) -> str:
    group = h.core.group(group_id)
    assert group is not None
    return group.kafka_state


def test_new_dynamic_member_v4_gets_member_id_required() -> None:
    """§1.6 step 3 (KIP-394): a dynamic v4+ join with "" gets a new id and MEMBER_ID_REQUIRED;
    the id is pending, not a member, and the group state is unchanged (§9 rule 3)."""
    h = GroupHarness()
    reply = h.join_reply(h.join(G, client_id="cli"))
    assert reply.error is ErrorCode.MEMBER_ID_REQUIRED
    assert reply.member_id.startswith("cli-")
    group = h.core.group(G)
    assert group is not None
    assert reply.member_id in group.pending_join
    assert not group.members
    assert group.kafka_state == "Empty"


@pytest.mark.parametrize("version", range(10))
def test_member_id_required_from_v4_and_not_below(version: int) -> None:
    """§1.6 step 3 / §6: MEMBER_ID_REQUIRED only from JoinGroup v4; v0-3 joins directly."""
    h = GroupHarness()
    token = h.join(G, version=version)
    reply = h.reply(token)
    if version >= 4:
        assert reply is not None and reply.error is ErrorCode.MEMBER_ID_REQUIRED  # type: ignore[union-attr]
    else:
        assert reply is None  # parked in PreparingRebalance
        assert _group_state(h) == "PreparingRebalance"


def test_known_member_id_with_absent_group_is_unknown_member() -> None:
    """§1.6 step 1: memberId != "" and the group absent -> UNKNOWN_MEMBER_ID, group not created."""
    h = GroupHarness()
    reply = h.join_reply(h.join(G, "ghost"))
    assert reply.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert reply.member_id == "ghost"
    assert h.core.group(G) is None


def test_invalid_group_id_and_session_timeout_prechecks() -> None:
    """§1.6 pre-checks: "" -> INVALID_GROUP_ID; session timeout out of range ->
    INVALID_SESSION_TIMEOUT, checked before NOT_COORDINATOR (J order, §8.1)."""
    h = GroupHarness()
    assert h.join_reply(h.join("")).error is ErrorCode.INVALID_GROUP_ID
    assert h.join_reply(h.join(G, session_timeout_ms=5999)).error is (
        ErrorCode.INVALID_SESSION_TIMEOUT
    )
    assert h.join_reply(h.join(G, session_timeout_ms=1_800_001)).error is (
        ErrorCode.INVALID_SESSION_TIMEOUT
    )
    h.core.unload(h.core.partition_for(G), h.clock.now_ms())
    assert h.join_reply(h.join(G, session_timeout_ms=1)).error is (
        ErrorCode.INVALID_SESSION_TIMEOUT
    )
    assert h.join_reply(h.join(G)).error is ErrorCode.NOT_COORDINATOR


def test_inconsistent_protocol_type_for_new_member() -> None:
    """§1.5 supports-protocols: a non-empty group needs the same protocol type; the new-member
    error carries memberId ""."""
    h = GroupHarness()
    h.form_group(G, 1)
    reply = h.join_reply(h.join(G, protocol_type="connect"))
    assert reply.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert reply.member_id == ""


def test_inconsistent_protocol_names_for_new_member() -> None:
    """§1.5 supports-protocols: at least one offered name must be supported by every member."""
    h = GroupHarness()
    h.form_group(G, 2)
    reply = h.join_reply(h.join(G, protocols=(("roundrobin", b""),)))
    assert reply.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_inconsistent_protocol_checked_before_member_id_required() -> None:
    """§9 rule 11: INCONSISTENT_GROUP_PROTOCOL comes before MEMBER_ID_REQUIRED."""
    h = GroupHarness()
    h.form_group(G, 1)
    reply = h.join_reply(h.join(G, protocol_type="connect", version=9))
    assert reply.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    group = h.core.group(G)
    assert group is not None and not group.pending_join


def test_inconsistent_protocol_checked_before_member_validation() -> None:
    """§1.6 step 4 / §9 rule 11: the protocol check precedes member validation, so an unknown
    id with an unsupported protocol gets INCONSISTENT_GROUP_PROTOCOL (id echoed)."""
    h = GroupHarness()
    h.form_group(G, 1)
    reply = h.join_reply(h.join(G, "unknown-id", protocols=(("other", b""),)))
    assert reply.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert reply.member_id == "unknown-id"
    # With a supported protocol the same id is simply unknown.
    assert h.join_reply(h.join(G, "unknown-id")).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_empty_group_forgets_its_protocol_type() -> None:
    """§1.5 supports-protocols / §9 rule 11: an Empty former "consumer" group accepts any
    non-empty protocol type, but not an empty type or an empty protocol list."""
    h = GroupHarness()
    members, _ = h.form_group(G, 1)
    h.leave(G, members[0])
    assert _group_state(h) == "Empty"
    assert h.join_reply(h.join(G, protocol_type="")).error is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.join_reply(h.join(G, protocols=())).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    member_id, token = h.new_member(G, protocol_type="connect", protocols=(("v1", b"x"),))
    h.run_until(lambda: h.reply(token) is not None)
    reply = h.join_reply(token)
    assert reply.error is ErrorCode.NONE
    assert reply.protocol_type == "connect" and reply.protocol_name == "v1"
    assert reply.member_id == member_id


def test_known_member_in_empty_group_is_unknown() -> None:
    """§1.6 step 4: a known-looking id joining an Empty group -> UNKNOWN_MEMBER_ID, gen -1."""
    h = GroupHarness()
    members, _ = h.form_group(G, 1)
    h.leave(G, members[0])
    reply = h.join_reply(h.join(G, members[0]))
    assert reply.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert reply.generation_id == -1
    assert reply.member_id == members[0]


def test_max_size_rejects_new_member_of_full_stable_group() -> None:
    """§1.6 step 2: S/CR accept a new id only if |members| < group.max.size;
    GROUP_MAX_SIZE_REACHED carries memberId ""."""
    h = GroupHarness(CoordinatorConfig(group_max_size=2))
    h.form_group(G, 2)
    reply = h.join_reply(h.join(G))
    assert reply.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert reply.member_id == ""
    assert _group_state(h) == "Stable"


def test_pending_members_do_not_count_toward_max_size() -> None:
    """§9 rule 3: MEMBER_ID_REQUIRED ids do not count toward group.max.size."""
    h = GroupHarness(CoordinatorConfig(group_max_size=2))
    h.form_group(G, 1)
    first = h.join_reply(h.join(G))
    second = h.join_reply(h.join(G))
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED
    assert second.error is ErrorCode.MEMBER_ID_REQUIRED


def test_max_size_in_preparing_rebalance_counts_parked_joins_and_kicks_out() -> None:
    """§1.6 step 2 / §9 rule 5: in PR the limit counts parked joins; a rejected existing member
    is removed from the group ("last rejoining members are kicked out")."""
    h = GroupHarness()
    members, generation = h.form_group(G, 3)
    h.failover(CoordinatorConfig(group_max_size=2))  # a loaded group over the limit rebalances
    assert _group_state(h) == "PreparingRebalance"
    t0 = h.join(G, members[0])
    t1 = h.join(G, members[1])
    rejected = h.join_reply(h.join(G, members[2]))
    assert rejected.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert rejected.member_id == ""
    group = h.core.group(G)
    assert group is not None
    assert members[2] not in group.members
    # The remaining two complete at the rebalance timeout (nobody else to wait for... but Kafka
    # does not complete on the kick itself); here all remaining members have joined already.
    h.run_until(lambda: h.reply(t0) is not None)
    assert h.join_reply(t0).generation_id == generation + 1
    assert h.join_reply(t1).generation_id == generation + 1


def test_protocol_vote_majority_among_common_protocols() -> None:
    """§1.5 select-protocol: candidates are the names every member supports; each member votes
    its first candidate in its own order; most votes wins."""
    h = GroupHarness()
    prefs = [
        (("sticky", b"s1"), ("roundrobin", b"r1"), ("range", b"g1")),
        (("range", b"g2"), ("roundrobin", b"r2")),
        (("roundrobin", b"r3"), ("range", b"g3")),
    ]
    tokens = [h.new_member(G, protocols=p)[1] for p in prefs]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    names = {h.join_reply(t).protocol_name for t in tokens}
    # sticky is not a candidate (member 2 and 3 lack it): votes roundrobin 2, range 1.
    assert names == {"roundrobin"}


def test_leader_gets_member_list_followers_do_not() -> None:
    """§1.7: only the leader's reply lists the members, each with the selected protocol's
    metadata; every member learns the leader id and the generation."""
    h = GroupHarness()
    joined = {}
    for i in range(3):
        member_id, token = h.new_member(
            G, protocols=(("range", f"m{i}".encode()), ("rr", b"x")), instance_id=None
        )
        joined[member_id] = token
    h.run_until(lambda: all(h.reply(t) is not None for t in joined.values()))
    replies = {m: h.join_reply(t) for m, t in joined.items()}
    leader = next(iter(replies.values())).leader
    assert leader == next(iter(joined))  # the first member added leads (§1.12)
    for member_id, reply in replies.items():
        assert reply.error is ErrorCode.NONE
        assert reply.member_id == member_id
        assert reply.leader == leader
        assert reply.generation_id == 1
        assert reply.protocol_type == "consumer" and reply.protocol_name == "range"
        assert reply.skip_assignment is False
        if member_id == leader:
            listed = {m.member_id: m.metadata for m in reply.members}
            assert set(listed) == set(joined)
            assert sorted(listed.values()) == [b"m0", b"m1", b"m2"]
        else:
            assert reply.members == ()
    assert _group_state(h) == "CompletingRebalance"


def test_unchanged_follower_in_stable_gets_immediate_reply() -> None:
    """§9 rule 10 / §1.6 step 4 S: an unchanged follower gets the current generation at once,
    no member list, no rebalance, and its new timeouts are ignored."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    reply = h.join_reply(h.join(G, follower, session_timeout_ms=20_000))
    assert reply.error is ErrorCode.NONE
    assert reply.generation_id == generation
    assert reply.leader == leader
    assert reply.members == ()
    assert _group_state(h) == "Stable"
    group = h.core.group(G)
    assert group is not None
    assert group.members[follower].session_timeout_ms == 10_000


def test_follower_with_changed_protocols_in_stable_rebalances() -> None:
    """§1.6 step 4 S: a follower with changed protocols -> update-member-and-rebalance."""
    h = GroupHarness()
    (_, follower), _ = h.form_group(G, 2)
    token = h.join(G, follower, protocols=(("range", b"new"),))
    assert h.reply(token) is None
    assert _group_state(h) == "PreparingRebalance"


def test_leader_rejoin_in_stable_forces_rebalance_then_completes_synchronously() -> None:
    """§9 rules 10 and 2: a leader's join in Stable always rebalances; the rebalance completes
    in the request that makes every member's join parked, with generation + 1."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    lt = h.join(G, leader)
    assert h.reply(lt) is None
    assert _group_state(h) == "PreparingRebalance"
    ft = h.join(G, follower)
    assert h.join_reply(lt).generation_id == generation + 1
    assert h.join_reply(ft).generation_id == generation + 1
    assert h.join_reply(lt).leader == leader  # a leader that rejoins stays leader (§1.12)
    assert _group_state(h) == "CompletingRebalance"


def test_sole_member_rejoin_answered_at_once() -> None:
    """§9 rule 2: a sole member's rejoin is answered at once with generation + 1."""
    h = GroupHarness()
    (leader,), generation = h.form_group(G, 1)
    reply = h.join_reply(h.join(G, leader))
    assert reply.generation_id == generation + 1
    assert [m.member_id for m in reply.members] == [leader]


def test_join_in_completing_rebalance_same_protocols_immediate() -> None:
    """§1.6 step 4 CR: matching protocols -> immediate reply for the current generation (the
    leader again gets the member list)."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(2)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    first = h.join_reply(tokens[0])
    again = h.join_reply(h.join(G, first.member_id))
    assert again.error is ErrorCode.NONE
    assert again.generation_id == first.generation_id
    assert len(again.members) == (2 if first.member_id == first.leader else 0)
    assert _group_state(h) == "CompletingRebalance"


def test_join_in_completing_rebalance_changed_protocols_rebalances() -> None:
    """§1.6 step 4 CR / §1.5 prepare-rebalance step 1: changed protocols in CR -> PR, and
    every parked SyncGroup is answered REBALANCE_IN_PROGRESS."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(2)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    leader = h.join_reply(tokens[0]).leader
    follower = next(
        h.join_reply(t).member_id for t in tokens if h.join_reply(t).member_id != leader
    )
    sync = h.sync(G, follower, 1)
    assert h.reply(sync) is None
    h.join(G, leader, protocols=(("range", b"changed"),))
    assert h.sync_reply(sync).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.sync_reply(sync).assignment == b""
    assert _group_state(h) == "PreparingRebalance"


def test_initial_rebalance_waits_full_delay_even_when_all_joined() -> None:
    """§9 rule 1: the initial join always waits group.initial.rebalance.delay.ms, even if every
    member has joined and even if R < delay."""
    h = GroupHarness()
    token = h.join(G, version=3, rebalance_timeout_ms=1000)
    h.advance(2999)
    assert h.reply(token) is None
    h.advance(1)
    assert h.join_reply(token).generation_id == 1


def _delay_harness() -> GroupHarness:
    return GroupHarness(CoordinatorConfig(group_initial_rebalance_delay_ms=50))


def test_initial_delay_without_new_members_fires_once() -> None:
    """§1.5 initial-delay fire: no new member during the window -> complete at D."""
    h = _delay_harness()
    token = h.join(G, version=3, rebalance_timeout_ms=150)
    h.advance(49)
    assert h.reply(token) is None
    h.advance(1)
    assert h.join_reply(token).generation_id == 1


def test_initial_delay_extension_arithmetic_50_100_150() -> None:
    """§1.5 initial-delay fire / §9 rule 1: D=50, R=150, a new member in every window -> the
    timer fires at 50, 100 and 150; total wait = max(D, R)."""
    h = _delay_harness()
    tokens = [h.join(G, version=3, rebalance_timeout_ms=150)]
    h.advance(10)
    tokens.append(h.join(G, version=3, rebalance_timeout_ms=150))
    h.advance(50)  # t=60: fired at 50, extended to 100
    assert all(h.reply(t) is None for t in tokens)
    tokens.append(h.join(G, version=3, rebalance_timeout_ms=150))
    h.advance(50)  # t=110: fired at 100, extended to 150
    tokens.append(h.join(G, version=3, rebalance_timeout_ms=150))
    h.advance(39)  # t=149
    assert all(h.reply(t) is None for t in tokens)
    h.advance(1)  # t=150: remaining is 0, so it completes although a member arrived
    assert all(h.join_reply(t).generation_id == 1 for t in tokens)
    assert h.clock.now_ms() == 150


def test_initial_delay_extends_only_after_a_new_member() -> None:
    """§1.5 initial-delay fire: one new member in the first window only -> fires at 50, 100."""
    h = _delay_harness()
    tokens = [h.join(G, version=3, rebalance_timeout_ms=150)]
    h.advance(10)
    tokens.append(h.join(G, version=3, rebalance_timeout_ms=150))
    h.advance(89)  # t=99
    assert all(h.reply(t) is None for t in tokens)
    h.advance(1)
    assert all(h.join_reply(t).generation_id == 1 for t in tokens)


def test_initial_delay_first_wait_full_even_if_r_below_d() -> None:
    """§1.5: "the first wait is always the full D_init even if R < D_init"; with R < D the
    remaining is 0, so no extension happens even with new members."""
    h = _delay_harness()
    tokens = [h.join(G, version=3, rebalance_timeout_ms=20)]
    h.advance(10)
    tokens.append(h.join(G, version=3, rebalance_timeout_ms=20))
    h.advance(39)
    assert all(h.reply(t) is None for t in tokens)
    h.advance(1)
    assert all(h.join_reply(t).generation_id == 1 for t in tokens)


def test_pending_member_blocks_join_completion_until_it_joins() -> None:
    """§9 rule 3 / §1.5 all-members-joined: a MEMBER_ID_REQUIRED id blocks completion; its
    second join completes the (non-initial) rebalance synchronously."""
    h = GroupHarness()
    (leader,), generation = h.form_group(G, 1)
    pending = h.join_reply(h.join(G)).member_id
    lt = h.join(G, leader)
    assert h.reply(lt) is None  # everybody joined, but an id is pending
    pt = h.join(G, pending)
    assert h.join_reply(lt).generation_id == generation + 1
    assert h.join_reply(pt).generation_id == generation + 1
    assert h.join_reply(pt).member_id == pending


def test_generation_starts_at_zero_and_first_is_one() -> None:
    """§1.1 / §1.12: a new group starts at generation 0; the first formed generation is 1."""
    h = GroupHarness()
    h.join(G)
    group = h.core.group(G)
    assert group is not None and group.generation == 0
    assert group.state is GroupState.STABLE and not group.members
    _, generation = h.form_group("other", 1)
    assert generation == 1


def test_session_timeout_bounds_are_inclusive() -> None:
    """§1.6 pre-checks: [group.min.session.timeout.ms, group.max.session.timeout.ms]."""
    h = GroupHarness()
    for timeout in (6000, 1_800_000):
        reply = h.join_reply(h.join(G, session_timeout_ms=timeout))
        assert reply.error is ErrorCode.MEMBER_ID_REQUIRED


def test_member_id_required_in_every_live_state_without_state_change() -> None:
    """§1.11 row 1: MEMBER_ID_REQUIRED in Empty, PR, CR and S; the state does not change."""
    h = GroupHarness()
    assert h.join_reply(h.join(G)).error is ErrorCode.MEMBER_ID_REQUIRED  # Empty
    token = h.join(G, version=3)
    assert _group_state(h) == "PreparingRebalance"
    assert h.join_reply(h.join(G)).error is ErrorCode.MEMBER_ID_REQUIRED
    h.run_until(lambda: h.reply(token) is not None)
    assert _group_state(h) == "CompletingRebalance"
    assert h.join_reply(h.join(G)).error is ErrorCode.MEMBER_ID_REQUIRED
    assert _group_state(h) == "CompletingRebalance"


def test_pending_member_second_join_in_completing_rebalance_rebalances() -> None:
    """§1.11 row 2, CR: the pending id's second join adds it and moves CR -> PR; parked syncs
    get REBALANCE_IN_PROGRESS."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(2)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    leader = replies[0].leader
    follower = next(r.member_id for r in replies if r.member_id != leader)
    sync = h.sync(G, follower, replies[0].generation_id)
    newcomer, token = h.new_member(G)
    assert h.sync_reply(sync).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.reply(token) is None
    group = h.core.group(G)
    assert group is not None
    assert newcomer in group.members and group.kafka_state == "PreparingRebalance"


def test_new_member_joining_stable_group_waits_for_rebalance_timeout() -> None:
    """§1.5 prepare-rebalance step 4: a non-initial rebalance arms R when not everyone has
    joined; members that rejoin in time make the generation."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    newcomer, token = h.new_member(G)
    assert _group_state(h) == "PreparingRebalance"
    lt = h.join(G, leader)
    assert h.reply(lt) is None
    ft = h.join(G, follower)  # the last one: completes synchronously
    for t in (token, lt, ft):
        assert h.join_reply(t).generation_id == generation + 1
    assert h.join_reply(token).member_id == newcomer
