"""Operational events (`rebalance.events`): what the core reports about a group's life."""

from __future__ import annotations

from assignors.consumer_protocol import Assignment, encode_assignment
from rebalance import GroupCoordinatorCore
from rebalance.events import EVENT_SCHEMA_VERSION
from rebalance.subscription import assigned_partitions
from rebalance.testing import GroupHarness


def consumer_assignment(topics: dict[str, list[int]]) -> bytes:
    partitions = tuple((topic, p) for topic, ps in topics.items() for p in ps)
    return encode_assignment(Assignment(partitions), version=0)


def test_a_group_life_in_events() -> None:
    h = GroupHarness()
    members, generation = h.form_group("g", 2)
    types = [e.type for e in h.events if e.group == "g"]
    assert types == [
        "member_joined",
        "rebalance_started",
        "member_joined",
        "join_completed",
        "sync_completed",
        "group_stable",
    ]
    started = next(e for e in h.events if e.type == "rebalance_started")
    assert started.fields == {"trigger": "member_joined", "members": 0}  # from an empty group
    joined = next(e for e in h.events if e.type == "join_completed")
    assert joined.generation == generation
    assert joined.fields["leader"] == members[0]
    assert sorted(joined.fields["members"]) == sorted(members)

    h.events.clear()
    h.advance(10_001)  # no heartbeats: both sessions expire
    expired = [e for e in h.events if e.type == "member_expired"]
    assert [e.fields["reason"] for e in expired] == ["session_timeout", "session_timeout"]
    # the session timeout the members joined with: they were last heard from that long ago
    assert [e.fields["session_timeout_ms"] for e in expired] == [10_000, 10_000]
    assert [e.type for e in h.events][-1] == "group_empty"
    assert h.events[-1].generation == generation + 1


def test_sync_completed_is_logged_with_decoded_consumer_assignments() -> None:
    h = GroupHarness()
    member_id, token = h.new_member("g")
    h.run_until(lambda: token in h.replies)
    generation = h.join_reply(token).generation_id
    assignment = consumer_assignment({"orders": [0, 2], "audit": [1]})
    h.sync("g", member_id, generation, {member_id: assignment})
    synced = next(e for e in h.events if e.type == "sync_completed")
    assert synced.fields["assignments"] == {member_id: assignment}  # raw: decoded off-path
    line = synced.to_json_dict(node=1)
    assert line["assignments"] == {member_id: [["audit", [1]], ["orders", [0, 2]]]}
    assert line["sizes"] == {member_id: len(assignment)}
    assert "protocol_type" not in line


def test_fenced_commit_is_reported_with_its_error() -> None:
    h = GroupHarness()
    members, generation = h.form_group("g", 1)
    h.commit("g", {("t", 0): 1}, member_id=members[0], generation=generation + 5)
    fenced = h.events[-1]
    assert fenced.type == "commit_fenced"
    assert fenced.fields == {"error": "ILLEGAL_GENERATION", "code": 22}
    assert fenced.to_json_dict(node=3)["v"] == EVENT_SCHEMA_VERSION


def test_assigned_partitions_rejects_garbage() -> None:
    assert assigned_partitions(b"") == []
    assert assigned_partitions(b"\x00\x00\x00\x00\x00\x01\x00\x09abc") is None


def test_partition_events_belong_to_no_group() -> None:
    core = GroupCoordinatorCore()
    loaded = core.load(12, records=(), now_ms=0)
    unloaded = core.unload(12, now_ms=5)
    events = [*loaded.events, *unloaded.events]
    assert [(e.type, e.group) for e in events] == [
        ("partition_loaded", None),
        ("partition_unloaded", None),
    ]
    assert events[0].to_json_dict(node=1)["group"] is None
