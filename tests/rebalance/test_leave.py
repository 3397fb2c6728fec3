"""LeaveGroup conformance: spec §1.10, §9 rules 7 and 19, §1.11 Leave row."""

from __future__ import annotations

from rebalance.classic.commands import LeavingMember
from rebalance.classic.records import GroupMetadataRecord
from rebalance.classic.replies import LeaveGroupReply, LeftMember
from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness

G = "g"


def test_v3_batch_leave_answers_per_member_in_request_order() -> None:
    """§1.10: v3+ batch; per member in request order; one rebalance afterwards."""
    h = GroupHarness()
    members, generation = h.form_group(G, 3)
    reply = h.leave(G, members[1], "ghost", members[2])
    assert reply.error is ErrorCode.NONE
    assert [m.error for m in reply.members] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.NONE,
    ]
    assert [m.member_id for m in reply.members] == [members[1], "ghost", members[2]]
    group = h.core.group(G)
    assert group is not None
    assert set(group.members) == {members[0]}
    assert group.kafka_state == "PreparingRebalance"
    # The remaining member's rejoin completes it at once (§9 rule 2).
    assert h.join_reply(h.join(G, members[0])).generation_id == generation + 1


def test_admin_removal_by_instance_id() -> None:
    """§1.10 / §2: memberId "" + a known groupInstanceId removes that static member; the
    response echoes memberId ""."""
    h = GroupHarness()
    members, _ = h.form_group(G, 1, instance_ids=["i1"])
    static = next(m for m in members if m.startswith("i1-"))
    reply = h.leave(G, LeavingMember("", "i1"))
    assert reply.members == (LeftMember("", "i1", ErrorCode.NONE),)
    group = h.core.group(G)
    assert group is not None
    assert static not in group.members and "i1" not in group.static_members


def test_admin_removal_of_unknown_instance_is_unknown_member() -> None:
    """§1.10: memberId "" with an unknown (or no) instance id -> UNKNOWN_MEMBER_ID."""
    h = GroupHarness()
    h.form_group(G, 1)
    reply = h.leave(G, LeavingMember("", "nobody"), LeavingMember(""))
    assert [m.error for m in reply.members] == [ErrorCode.UNKNOWN_MEMBER_ID] * 2
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "Stable"


def test_leave_with_fenced_instance() -> None:
    """§2 / §9 rule 14: an instance id mapped to another member id -> FENCED_INSTANCE_ID."""
    h = GroupHarness()
    members, _ = h.form_group(G, 1, instance_ids=["i1"])
    dynamic = next(m for m in members if not m.startswith("i1-"))
    reply = h.leave(G, LeavingMember(dynamic, "i1"))
    assert reply.members[0].error is ErrorCode.FENCED_INSTANCE_ID
    group = h.core.group(G)
    assert group is not None and dynamic in group.members


def test_leave_unknown_group() -> None:
    """§1.10 / §9 rule 19: group absent -> top-level NONE, every member UNKNOWN_MEMBER_ID."""
    h = GroupHarness()
    reply = h.leave(G, "a", LeavingMember("", "i"))
    assert reply.error is ErrorCode.NONE
    assert reply.members == (
        LeftMember("a", None, ErrorCode.UNKNOWN_MEMBER_ID),
        LeftMember("", "i", ErrorCode.UNKNOWN_MEMBER_ID),
    )
    assert h.core.group(G) is None


def test_last_member_leaving_empties_group_with_generation_bump() -> None:
    """§9 rule 7 / §1.10: the last member leaving -> Empty immediately, generation + 1, the
    empty group metadata persisted."""
    h = GroupHarness()
    (member,), generation = h.form_group(G, 1)
    before = len(h.records)
    h.leave(G, member)
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Empty"
    assert group.generation == generation + 1
    assert group.leader_id is None and group.protocol_name is None
    written = [r for r in h.records[before:] if isinstance(r, GroupMetadataRecord)]
    assert written and written[-1].value is not None
    assert written[-1].value.generation == generation + 1
    assert written[-1].value.members == ()


def test_last_member_leaving_completing_rebalance() -> None:
    """§1.11 Leave in CR: remove, -> PR (or -> E if last); parked syncs are not left hanging."""
    h = GroupHarness()
    member, token = h.new_member(G)
    h.run_until(lambda: h.reply(token) is not None)
    h.leave(G, member)
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Empty" and group.generation == 2


def test_folded_error_for_v0_to_v2() -> None:
    """§9 rule 19 / §1.10: v0-2 fold the first member error into the single error."""
    h = GroupHarness()
    h.form_group(G, 1)
    reply = h.leave(G, "ghost", version=0)
    assert reply.folded_error is ErrorCode.UNKNOWN_MEMBER_ID
    assert LeaveGroupReply(ErrorCode.NOT_COORDINATOR).folded_error is ErrorCode.NOT_COORDINATOR
    ok = LeaveGroupReply(ErrorCode.NONE, (LeftMember("a", None, ErrorCode.NONE),))
    assert ok.folded_error is ErrorCode.NONE


def test_leave_answers_parked_join_with_unknown_member() -> None:
    """§1.10: a leaving member's parked join is answered UNKNOWN_MEMBER_ID, memberId ""."""
    h = GroupHarness()
    (leader, follower), _ = h.form_group(G, 2)
    token = h.join(G, leader)
    assert h.reply(token) is None
    h.leave(G, leader)
    reply = h.join_reply(token)
    assert reply.error is ErrorCode.UNKNOWN_MEMBER_ID and reply.member_id == ""
    group = h.core.group(G)
    assert group is not None
    assert set(group.members) == {follower}
    assert group.leader_id == follower  # the leader left: a remaining member leads (§1.12)


def test_leave_in_preparing_rebalance_may_complete_join() -> None:
    """§1.10: in PR a successful leave runs maybe-complete-join: if everyone left has joined,
    the join completes in the same request."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    lt = h.join(G, leader)
    h.leave(G, follower)
    assert h.join_reply(lt).generation_id == generation + 1
    assert h.join_reply(lt).members[0].member_id == leader


def test_pending_member_leave_removes_the_pending_id_and_rebalances() -> None:
    """§1.10 / §1.12: a pending (MEMBER_ID_REQUIRED) id leaving is removed from pending (NONE),
    and a Stable group rebalances, as Kafka 4.4 (maybePrepareRebalanceOrCompleteJoin for every
    valid leave; checked against the broker: `join a0; join a0; sync a0; join a1; leave a1`
    leaves the group PreparingRebalance)."""
    h = GroupHarness()
    _, generation = h.form_group(G, 1)
    pending = h.join_reply(h.join(G)).member_id
    reply = h.leave(G, pending)
    assert reply.members[0].error is ErrorCode.NONE
    group = h.core.group(G)
    assert group is not None
    assert pending not in group.pending_join
    assert group.kafka_state == "PreparingRebalance" and group.generation == generation
    # The pending id is gone: its second join is an unknown member.
    assert h.join_reply(h.join(G, pending)).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_pending_member_leave_in_preparing_rebalance_completes_join() -> None:
    """§9 rule 3: pending ids block completion until they join, leave or expire."""
    h = GroupHarness()
    (leader,), generation = h.form_group(G, 1)
    pending = h.join_reply(h.join(G)).member_id
    lt = h.join(G, leader)
    assert h.reply(lt) is None
    h.leave(G, pending)
    assert h.join_reply(lt).generation_id == generation + 1


def test_leave_not_coordinator_and_invalid_group_id() -> None:
    """§1.10 pre-checks: "" -> INVALID_GROUP_ID; unowned partition -> NOT_COORDINATOR."""
    h = GroupHarness()
    assert h.leave("", "m").error is ErrorCode.INVALID_GROUP_ID
    h.core.unload(h.core.partition_for(G), h.clock.now_ms())
    assert h.leave(G, "m").error is ErrorCode.NOT_COORDINATOR
