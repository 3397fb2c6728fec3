"""SyncGroup conformance: spec §1.8, §1.5 (leader-sync → propagate), §1.11 Sync rows."""

from __future__ import annotations

from rebalance.classic.commands import SyncGroup
from rebalance.classic.records import GroupMetadataRecord
from rebalance.classic.timers import session_key
from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness

G = "g"


def _completing(h: GroupHarness, n: int) -> tuple[str, list[str], int]:
    """Form generation 1 of `n` members and stop in CompletingRebalance.

    Returns (leader, followers, generation)."""
    tokens = [h.new_member(G)[1] for _ in range(n)]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    leader = replies[0].leader
    followers = [r.member_id for r in replies if r.member_id != leader]
    return leader, followers, replies[0].generation_id


def test_sync_unknown_or_empty_group_is_unknown_member() -> None:
    """§1.8: group absent -> UNKNOWN_MEMBER_ID; group Empty -> UNKNOWN_MEMBER_ID."""
    h = GroupHarness()
    assert h.sync_reply(h.sync(G, "m", 1)).error is ErrorCode.UNKNOWN_MEMBER_ID
    (member,), generation = h.form_group(G, 1)
    h.leave(G, member)
    assert h.sync_reply(h.sync(G, member, generation + 1)).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_v5_requires_protocol_type_and_name() -> None:
    """§1.8 pre-checks / §6: a v5+ request lacking ProtocolType or ProtocolName ->
    INCONSISTENT_GROUP_PROTOCOL (before the group is looked at); v4 may omit them."""
    h = GroupHarness()
    leader, _, generation = _completing(h, 1)
    assert h.sync_reply(h.sync(G, leader, generation, protocol_type=None)).error is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.sync_reply(h.sync("nope", "m", 1, protocol_name=None)).error is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    reply = h.sync_reply(
        h.sync(G, leader, generation, protocol_type=None, protocol_name=None, version=4)
    )
    assert reply.error is ErrorCode.NONE


def test_sync_validation_order_member_then_generation_then_protocol() -> None:
    """§1.8: member validation, then generation, then protocol type/name checks."""
    h = GroupHarness()
    leader, _, generation = _completing(h, 2)
    assert h.sync_reply(h.sync(G, "ghost", generation + 5)).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync_reply(h.sync(G, leader, generation + 5, protocol_type="x")).error is (
        ErrorCode.ILLEGAL_GENERATION
    )
    assert h.sync_reply(h.sync(G, leader, generation, protocol_type="connect")).error is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.sync_reply(h.sync(G, leader, generation, protocol_name="roundrobin")).error is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.core.group(G) is not None
    assert h.core.group(G).kafka_state == "CompletingRebalance"  # type: ignore[union-attr]


def test_follower_sync_parks_until_leader_assigns() -> None:
    """§1.8 CR / §1.5 propagate: followers wait; the leader's sync answers everybody with NONE,
    protocolType, protocolName and their own assignment; missing members get empty bytes and
    extra keys are ignored; the group becomes Stable."""
    h = GroupHarness()
    leader, followers, generation = _completing(h, 3)
    f1, f2 = followers
    t1 = h.sync(G, f1, generation)
    assert h.reply(t1) is None
    lt = h.sync(G, leader, generation, {leader: b"L", f1: b"F1", "stranger": b"X"})
    for token, expected in ((lt, b"L"), (t1, b"F1")):
        reply = h.sync_reply(token)
        assert reply.error is ErrorCode.NONE
        assert reply.assignment == expected
        assert reply.protocol_type == "consumer" and reply.protocol_name == "range"
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Stable"
    assert "stranger" not in group.members
    # A late follower in Stable is answered at once with its stored (empty) assignment.
    late = h.sync_reply(h.sync(G, f2, generation))
    assert late.error is ErrorCode.NONE and late.assignment == b""


def test_leader_sync_persists_group_metadata_with_assignment() -> None:
    """§1.8 CR: the leader's assignment is persisted as GroupMetadata before it is handed out."""
    h = GroupHarness()
    leader, (follower,), generation = _completing(h, 2)
    before = len(h.records)
    h.sync(G, leader, generation, {leader: b"a", follower: b"b"})
    written = [r for r in h.records[before:] if isinstance(r, GroupMetadataRecord)]
    assert len(written) == 1
    value = written[0].value
    assert value is not None
    assert value.generation == generation and value.leader_id == leader
    assert {m.member_id: m.assignment for m in value.members} == {leader: b"a", follower: b"b"}


def test_sync_in_preparing_rebalance_is_rebalance_in_progress() -> None:
    """§1.8 PR -> REBALANCE_IN_PROGRESS."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    h.join(G, leader)
    reply = h.sync_reply(h.sync(G, follower, generation))
    assert reply.error is ErrorCode.REBALANCE_IN_PROGRESS
    assert reply.assignment == b"" and reply.protocol_type is None and reply.protocol_name is None


def test_sync_wrong_generation_in_every_state() -> None:
    """§1.11 Sync wrong gen: ILLEGAL_GENERATION in PR, CR and S."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    assert h.sync_reply(h.sync(G, follower, generation - 1)).error is (ErrorCode.ILLEGAL_GENERATION)
    h.join(G, leader)
    assert h.sync_reply(h.sync(G, follower, generation + 1)).error is (ErrorCode.ILLEGAL_GENERATION)
    h.join(G, follower)  # completes: CR with generation + 1
    assert h.sync_reply(h.sync(G, follower, generation)).error is ErrorCode.ILLEGAL_GENERATION


def test_sync_in_stable_does_not_rearm_session() -> None:
    """§1.4 / §8.1: SyncGroup in Stable does not re-arm the session (new coordinator)."""
    h = GroupHarness()
    (_, follower), generation = h.form_group(G, 2)
    deadline = h.timer.deadline(session_key(G, follower))
    h.advance(1000)
    assert h.sync_reply(h.sync(G, follower, generation)).error is ErrorCode.NONE
    assert h.timer.deadline(session_key(G, follower)) == deadline


def test_sync_answer_rearms_session_of_parked_members() -> None:
    """§1.4: assignment propagation re-arms the heartbeat of every member whose parked
    SyncGroup was answered."""
    h = GroupHarness()
    leader, (follower,), generation = _completing(h, 2)
    h.advance(1000)
    h.sync(G, follower, generation)
    h.advance(1000)
    h.sync(G, leader, generation, {})
    now = h.clock.now_ms()
    assert h.timer.deadline(session_key(G, follower)) == now + 10_000
    assert h.timer.deadline(session_key(G, leader)) == now + 10_000


def test_duplicate_sync_supersedes_parked_one() -> None:
    """§9 rule 17 with our DIFFERS note: a duplicate SyncGroup replaces the parked one, and the
    superseded request is answered REBALANCE_IN_PROGRESS (Kafka never answers it)."""
    h = GroupHarness()
    leader, (follower,), generation = _completing(h, 2)
    first = h.sync(G, follower, generation)
    second = h.sync(G, follower, generation)
    assert h.sync_reply(first).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.reply(second) is None
    h.sync(G, leader, generation, {follower: b"f"})
    assert h.sync_reply(second).assignment == b"f"


def test_sync_invalid_group_id() -> None:
    """§1.8 pre-checks: an empty group id -> INVALID_GROUP_ID."""
    h = GroupHarness()
    token = h.send(SyncGroup("", 1, "m", protocol_type="consumer", protocol_name="range"))
    assert h.sync_reply(token).error is ErrorCode.INVALID_GROUP_ID


def test_sync_v5_protocol_check_precedes_coordinator_checks() -> None:
    """§1.8 pre-checks, in order: ... v5+ lacking ProtocolType/ProtocolName ->
    INCONSISTENT_GROUP_PROTOCOL (KafkaApis, before the coordinator), then NOT_COORDINATOR,
    then loading."""
    h = GroupHarness()
    partition = h.core.partition_for(G)
    h.core.unload(partition, h.clock.now_ms())
    assert h.sync_reply(h.sync(G, "m", 1, protocol_name=None)).error is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.sync_reply(h.sync(G, "m", 1)).error is ErrorCode.NOT_COORDINATOR
    h.core.begin_load(partition)
    assert h.sync_reply(h.sync(G, "m", 1, protocol_type=None)).error is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.sync_reply(h.sync(G, "m", 1)).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
