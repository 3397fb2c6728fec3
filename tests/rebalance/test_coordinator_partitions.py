"""Coordinator partitions: ownership, loading, unloading and reload (spec §4, §1.11 unload row)."""

from __future__ import annotations

from rebalance.classic.timers import session_key
from rebalance.commands import OffsetDelete, OffsetFetch
from rebalance.config import CoordinatorConfig
from rebalance.errors import ErrorCode
from rebalance.replies import OffsetDeleteReply, OffsetFetchReply
from rebalance.testing import GroupHarness

G = "g"


def test_partition_placement_examples() -> None:
    """§4 / §9 rule 16: Utils.abs(String.hashCode()) % 50 over UTF-16 code units."""
    h = GroupHarness()
    examples = {
        "my-group": 12,
        "consumer-group-1": 20,
        "grüppe": 12,
        "日本語グループ": 31,
        "grp-😀": 13,
        "polygenelubricants": 0,
        "": 0,
    }
    assert {g: h.core.partition_for(g) for g in examples} == examples


def test_unowned_partition_is_not_coordinator_for_every_group_api() -> None:
    """§4: requests for a group whose partition is not owned -> NOT_COORDINATOR."""
    h = GroupHarness()
    h.core.unload(h.core.partition_for(G), h.clock.now_ms())
    assert h.join_reply(h.join(G)).error is ErrorCode.NOT_COORDINATOR
    assert h.sync_reply(h.sync(G, "m", 1)).error is ErrorCode.NOT_COORDINATOR
    assert h.heartbeat(G, "m", 1) is ErrorCode.NOT_COORDINATOR
    assert h.leave(G, "m").error is ErrorCode.NOT_COORDINATOR
    assert set(h.commit(G, {("t", 0): 1}).values()) == {ErrorCode.NOT_COORDINATOR}
    fetch = h.reply(h.send(OffsetFetch(G, None)))
    assert isinstance(fetch, OffsetFetchReply) and fetch.error is ErrorCode.NOT_COORDINATOR
    delete = h.reply(h.send(OffsetDelete(G, ())))
    assert isinstance(delete, OffsetDeleteReply) and delete.error is ErrorCode.NOT_COORDINATOR


def test_loading_partition_is_load_in_progress() -> None:
    """§4: while loading -> COORDINATOR_LOAD_IN_PROGRESS (J: SyncGroup too, §8.1); Heartbeat
    NONE; the group is not observable."""
    h = GroupHarness()
    members, generation = h.form_group(G, 1)
    partition = h.core.partition_for(G)
    h.core.unload(partition, h.clock.now_ms())
    h.core.begin_load(partition)
    assert h.join_reply(h.join(G)).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert h.sync_reply(h.sync(G, members[0], generation)).error is (
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    )
    assert h.heartbeat(G, members[0], generation) is ErrorCode.NONE
    assert h.leave(G, members[0]).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert set(h.commit(G, {("t", 0): 1}).values()) == {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
    fetch = h.reply(h.send(OffsetFetch(G, None)))
    assert isinstance(fetch, OffsetFetchReply)
    assert fetch.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_unload_answers_parked_joins_with_not_coordinator() -> None:
    """§4 onUnloaded / §1.11: PR group -> Dead; parked joins -> NOT_COORDINATOR."""
    h = GroupHarness()
    (leader, _), _ = h.form_group(G, 2)
    token = h.join(G, leader)
    h.unload(h.core.partition_for(G))
    assert h.join_reply(token).error is ErrorCode.NOT_COORDINATOR
    assert h.core.group(G) is None
    assert not h.parked()


def test_unload_answers_parked_syncs_with_not_coordinator() -> None:
    """§4 onUnloaded / §1.11: CR group -> Dead; parked syncs -> NOT_COORDINATOR, empty
    assignment."""
    h = GroupHarness()
    tokens = [h.new_member(G)[1] for _ in range(2)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    follower = next(r for r in replies if r.member_id != r.leader)
    sync = h.sync(G, follower.member_id, follower.generation_id)
    assert h.reply(sync) is None
    h.unload(h.core.partition_for(G))
    reply = h.sync_reply(sync)
    assert reply.error is ErrorCode.NOT_COORDINATOR and reply.assignment == b""
    assert all(key[1] != G for key in h.core.armed_timers())


def test_reload_restores_stable_group_with_generation_and_assignment() -> None:
    """§4: after load, groups with members are Stable with the last persisted generation,
    protocol, leader, members and assignments."""
    h = GroupHarness()
    members, generation = h.form_group(G, 2)
    h.failover()
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Stable"
    assert group.generation == generation
    assert group.protocol_type == "consumer" and group.protocol_name == "range"
    assert group.leader_id == members[0]
    assert {m: group.members[m].assignment for m in group.members} == {
        m: m.encode() for m in members
    }
    for member in members:
        assert h.heartbeat(G, member, generation) is ErrorCode.NONE
        reply = h.sync_reply(h.sync(G, member, generation))
        assert reply.error is ErrorCode.NONE and reply.assignment == member.encode()


def test_reload_arms_sessions_from_load_time() -> None:
    """§4: every member's session timer is armed from load time."""
    h = GroupHarness()
    members, _ = h.form_group(G, 2)
    h.advance(8000)
    h.failover()
    now = h.clock.now_ms()
    for member in members:
        assert h.timer.deadline(session_key(G, member)) == now + 10_000
    h.advance(9999)
    group = h.core.group(G)
    assert group is not None and len(group.members) == 2
    h.advance(1)
    assert not group.members


def test_reload_empty_group_and_offsets() -> None:
    """§4: groups without members come back Empty with their generation and offsets."""
    h = GroupHarness()
    (member,), generation = h.form_group(G, 1)
    h.commit(G, {("t", 0): 9}, member_id=member, generation=generation)
    h.leave(G, member)
    h.commit("simple", {("t", 1): 3})
    h.failover()
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Empty" and group.generation == generation + 1
    assert h.committed(G, ("t", 0)) == {("t", 0): 9}
    assert h.committed("simple", ("t", 1)) == {("t", 1): 3}


def test_unsynced_generation_is_lost_on_reload() -> None:
    """§4: a generation formed but never synced is not persisted: its members get
    ILLEGAL_GENERATION after a reload and must rejoin."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    lt = h.join(G, leader)
    h.join(G, follower)
    new_generation = h.join_reply(lt).generation_id
    assert new_generation == generation + 1
    h.failover()
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Stable" and group.generation == generation
    assert h.sync_reply(h.sync(G, leader, new_generation)).error is ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat(G, follower, new_generation) is ErrorCode.ILLEGAL_GENERATION


def test_reload_after_static_replacement_keeps_new_member_id() -> None:
    """§2 Stable replacement persists GroupMetadata; §4 reload uses the last record."""
    h = GroupHarness()
    members, generation = h.form_group(G, 0, instance_ids=["a", "b"])
    new_id = h.join_reply(h.join(G, instance_id="b")).member_id
    h.failover()
    group = h.core.group(G)
    assert group is not None
    assert group.static_members["b"] == new_id
    assert set(group.members) == {m for m in members if not m.startswith("b-")} | {new_id}
    assert h.heartbeat(G, new_id, generation, "b") is ErrorCode.NONE


def test_loaded_group_over_max_size_rebalances_at_once() -> None:
    """§4: a loaded group larger than group.max.size immediately starts a rebalance."""
    h = GroupHarness()
    h.form_group(G, 3)
    h.failover(CoordinatorConfig(group_max_size=2))
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "PreparingRebalance"
