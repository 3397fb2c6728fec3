"""Offset conformance: spec §3.1 (commit fencing), §3.2 (fetch), §3.3 (retention), §3.4
(OffsetDelete), §9 rules 12, 13, 15."""

from __future__ import annotations

from rebalance.classic.timers import session_key
from rebalance.commands import CommitPartition, CommitTopic, OffsetCommit, OffsetDelete, OffsetFetch
from rebalance.config import CoordinatorConfig
from rebalance.errors import ErrorCode
from rebalance.replies import OffsetCommitReply, OffsetDeleteReply, OffsetFetchReply
from rebalance.testing import GroupHarness, consumer_subscription

G = "g"
TP = ("t", 0)


def _codes(result: dict[tuple[str, int], ErrorCode]) -> set[ErrorCode]:
    return set(result.values())


# ------------------------------------------------------------------------ commit fencing §3.1
def test_simple_commit_to_unknown_group_creates_simple_group() -> None:
    """§3.1 rule 1 / §9 rule 12: generation -1 on an unknown group is accepted and creates a
    "simple" group (Empty, no protocol type)."""
    h = GroupHarness()
    assert _codes(h.commit(G, {TP: 42})) == {ErrorCode.NONE}
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Empty" and group.protocol_type is None
    assert h.committed(G, TP) == {TP: 42}


def test_simple_commit_to_empty_group_skips_member_validation() -> None:
    """§3.1 rule 3 / §9 rule 12: generation -1 on an Empty group is accepted without any
    member or instance check."""
    h = GroupHarness()
    (member,), _ = h.form_group(G, 1)
    h.leave(G, member)
    result = h.commit(G, {TP: 7}, member_id="whoever", instance_id="nobody")
    assert _codes(result) == {ErrorCode.NONE}
    assert h.committed(G, TP) == {TP: 7}


def test_generation_commit_to_unknown_group_v8_illegal_generation_v9_not_found() -> None:
    """§3.1 rule 1 / §9 rule 12 / §8.1: generation >= 0 on an unknown group -> 22 below v9,
    GROUP_ID_NOT_FOUND from v9; no group is created."""
    h = GroupHarness()
    assert _codes(h.commit(G, {TP: 1}, member_id="m", generation=1, version=8)) == {
        ErrorCode.ILLEGAL_GENERATION
    }
    assert _codes(h.commit(G, {TP: 1}, member_id="m", generation=1, version=9)) == {
        ErrorCode.GROUP_ID_NOT_FOUND
    }
    assert h.core.group(G) is None


def test_anonymous_commit_to_non_empty_group_is_unknown_member() -> None:
    """§3.1 rule 5: generation -1 without member/instance on a non-empty group -> 25."""
    h = GroupHarness()
    h.form_group(G, 1)
    assert _codes(h.commit(G, {TP: 1})) == {ErrorCode.UNKNOWN_MEMBER_ID}


def test_member_and_generation_validation() -> None:
    """§3.1 rule 4 / §9 rule 14: instance unknown -> 25; instance mapped elsewhere -> 82; member
    unknown -> 25; wrong generation -> 22; all of it also for generation -1 with a member id."""
    h = GroupHarness()
    members, generation = h.form_group(G, 1, instance_ids=["i"])
    static = next(m for m in members if m.startswith("i-"))
    dynamic = next(m for m in members if m != static)
    cases = [
        (dict(member_id=static, instance_id="zz", generation=generation), "UNKNOWN_MEMBER_ID"),
        (dict(member_id=dynamic, instance_id="i", generation=generation), "FENCED_INSTANCE_ID"),
        (dict(member_id="ghost", generation=generation), "UNKNOWN_MEMBER_ID"),
        (dict(member_id=dynamic, generation=generation + 1), "ILLEGAL_GENERATION"),
        (dict(member_id=dynamic, generation=-1), "ILLEGAL_GENERATION"),
        (dict(member_id=static, instance_id="i", generation=generation), "NONE"),
        (dict(member_id=dynamic, generation=generation), "NONE"),
    ]
    for kwargs, expected in cases:
        assert _codes(h.commit(G, {TP: 1}, **kwargs)) == {ErrorCode[expected]}, kwargs  # type: ignore[arg-type]


def test_commit_in_completing_rebalance_is_rebalance_in_progress() -> None:
    """§3.1 rule 6 / §9 rule 13: CR -> 27, but a stale generation there -> 22 (checked first)."""
    h = GroupHarness()
    member, token = h.new_member(G)
    h.run_until(lambda: h.reply(token) is not None)
    generation = h.join_reply(token).generation_id
    assert _codes(h.commit(G, {TP: 1}, member_id=member, generation=generation)) == {
        ErrorCode.REBALANCE_IN_PROGRESS
    }
    assert _codes(h.commit(G, {TP: 1}, member_id=member, generation=generation - 1)) == {
        ErrorCode.ILLEGAL_GENERATION
    }


def test_commit_in_preparing_rebalance_previous_generation_accepted_and_rearms() -> None:
    """§3.1 rule 7 / §9 rule 13: in PR members of the previous (still current) generation can
    commit, and the commit re-arms their session."""
    h = GroupHarness()
    (leader, follower), generation = h.form_group(G, 2)
    h.join(G, leader)
    h.advance(4000)
    result = h.commit(G, {TP: 5}, member_id=follower, generation=generation)
    assert _codes(result) == {ErrorCode.NONE}
    assert h.timer.deadline(session_key(G, follower)) == h.clock.now_ms() + 10_000
    assert h.committed(G, TP) == {TP: 5}


def test_commit_in_stable_rearms_session() -> None:
    """§1.4 / §3.1 rule 7: accepted commits in Stable re-arm the member's session."""
    h = GroupHarness()
    (member,), generation = h.form_group(G, 1)
    h.advance(9000)
    assert _codes(h.commit(G, {TP: 1}, member_id=member, generation=generation)) == {ErrorCode.NONE}
    h.advance(9000)
    group = h.core.group(G)
    assert group is not None and member in group.members


def test_metadata_too_large_is_per_partition() -> None:
    """§3.1: metadata longer than offset.metadata.max.bytes -> OFFSET_METADATA_TOO_LARGE for
    that partition only; others stored."""
    h = GroupHarness(CoordinatorConfig(offset_metadata_max_bytes=4))
    cmd = OffsetCommit(
        G,
        (
            CommitTopic(
                "t",
                (
                    CommitPartition(0, 10, metadata="abcd"),
                    CommitPartition(1, 11, metadata="abcde"),
                    CommitPartition(2, 12, metadata=None),
                ),
            ),
        ),
    )
    reply = h.reply(h.send(cmd))
    assert isinstance(reply, OffsetCommitReply)
    assert reply.topics == (
        (
            "t",
            (
                (0, ErrorCode.NONE),
                (1, ErrorCode.OFFSET_METADATA_TOO_LARGE),
                (2, ErrorCode.NONE),
            ),
        ),
    )
    assert h.committed(G, ("t", 0), ("t", 1), ("t", 2)) == {
        ("t", 0): 10,
        ("t", 1): -1,
        ("t", 2): 12,
    }


def test_group_level_error_reported_on_every_partition() -> None:
    """§3.1: group-level errors are reported on every partition of the request."""
    h = GroupHarness()
    h.form_group(G, 1)
    result = h.commit(G, {("a", 0): 1, ("a", 1): 1, ("b", 3): 1})
    assert result == dict.fromkeys([("a", 0), ("a", 1), ("b", 3)], ErrorCode.UNKNOWN_MEMBER_ID)


# ------------------------------------------------------------------------------ fetch §3.2
def test_fetch_unknown_group_returns_minus_one() -> None:
    """§3.2 / §9 rule 15: unknown group -> offsets -1, leader epoch -1, metadata "", NONE;
    "all topics" -> empty list."""
    h = GroupHarness()
    reply = h.reply(h.send(OffsetFetch(G, (("t", (0, 1)),))))
    assert isinstance(reply, OffsetFetchReply)
    assert reply.error is ErrorCode.NONE
    ((topic, found),) = reply.topics
    assert topic == "t"
    assert [(f.partition, f.offset, f.leader_epoch, f.metadata, f.error) for f in found] == [
        (0, -1, -1, "", ErrorCode.NONE),
        (1, -1, -1, "", ErrorCode.NONE),
    ]
    everything = h.reply(h.send(OffsetFetch(G, None)))
    assert isinstance(everything, OffsetFetchReply) and everything.topics == ()


def test_fetch_all_topics_returns_every_committed_offset() -> None:
    """§3.2 / §6 OffsetFetch v2+: null topics = every committed offset of the group."""
    h = GroupHarness()
    h.commit(G, {("b", 1): 11, ("a", 0): 10, ("b", 0): 12}, metadata="m")
    reply = h.reply(h.send(OffsetFetch(G, None)))
    assert isinstance(reply, OffsetFetchReply)
    got = {(t, f.partition): (f.offset, f.metadata) for t, found in reply.topics for f in found}
    assert got == {("a", 0): (10, "m"), ("b", 0): (12, "m"), ("b", 1): (11, "m")}


def test_fetch_returns_offsets_in_any_group_state() -> None:
    """§3.2: stored offsets are returned regardless of group state; unknown partitions -1."""
    h = GroupHarness()
    (leader, _), generation = h.form_group(G, 2)
    h.commit(G, {TP: 3}, member_id=leader, generation=generation)
    h.join(G, leader)  # PR
    assert h.committed(G, TP, ("t", 9)) == {TP: 3, ("t", 9): -1}


# --------------------------------------------------------------------------- delete §3.4
def _delete(h: GroupHarness, *topics: tuple[str, tuple[int, ...]]) -> OffsetDeleteReply:
    reply = h.reply(h.send(OffsetDelete(G, tuple(topics))))
    assert isinstance(reply, OffsetDeleteReply)
    return reply


def test_offset_delete_unknown_group() -> None:
    """§3.4: group absent -> GROUP_ID_NOT_FOUND (top level)."""
    h = GroupHarness()
    assert _delete(h, ("t", (0,))).error is ErrorCode.GROUP_ID_NOT_FOUND


def test_offset_delete_empty_group_id_is_invalid() -> None:
    """GroupCoordinatorService.deleteOffsets: isGroupIdNotEmpty (commits accept "")."""
    h = GroupHarness()
    reply = h.reply(h.send(OffsetDelete("", (("t", (0,)),))))
    assert isinstance(reply, OffsetDeleteReply)
    assert reply.error is ErrorCode.INVALID_GROUP_ID and reply.topics == ()


def test_offset_delete_non_consumer_non_empty_group() -> None:
    """§3.4: non-empty group with protocolType != "consumer" -> NON_EMPTY_GROUP."""
    h = GroupHarness()
    h.form_group(G, 1, protocol_type="connect")
    assert _delete(h, ("t", (0,))).error is ErrorCode.NON_EMPTY_GROUP


def test_offset_delete_subscribed_topic_is_refused() -> None:
    """§3.4: a subscribed topic -> GROUP_SUBSCRIBED_TO_TOPIC per partition; other topics NONE
    and their offsets tombstoned. Subscription = ConsumerProtocol Subscription metadata."""
    h = GroupHarness()
    protocols = (("range", consumer_subscription("t", "u")),)
    (member,), generation = h.form_group(G, 1, protocols=protocols)
    h.commit(G, {("t", 0): 1, ("x", 0): 2}, member_id=member, generation=generation)
    reply = _delete(h, ("t", (0, 1)), ("x", (0, 5)))
    assert reply.error is ErrorCode.NONE
    assert reply.topics == (
        ("t", ((0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC), (1, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))),
        ("x", ((0, ErrorCode.NONE), (5, ErrorCode.NONE))),
    )
    assert h.committed(G, ("t", 0), ("x", 0)) == {("t", 0): 1, ("x", 0): -1}


def test_offset_delete_unparseable_subscription_means_subscribed_to_everything() -> None:
    """§3.4: a non-empty consumer group whose metadata cannot be parsed is treated as
    subscribed to every topic."""
    h = GroupHarness()
    (member,), generation = h.form_group(G, 1, protocols=(("range", b"\x00"),))
    h.commit(G, {("x", 0): 2}, member_id=member, generation=generation)
    reply = _delete(h, ("x", (0,)))
    assert reply.topics == (("x", ((0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),)),)
    assert h.committed(G, ("x", 0)) == {("x", 0): 2}


def test_offset_delete_empty_group_deletes_anything() -> None:
    """§3.4: an Empty consumer group subscribes to nothing; a simple group likewise."""
    h = GroupHarness()
    protocols = (("range", consumer_subscription("t")),)
    (member,), generation = h.form_group(G, 1, protocols=protocols)
    h.commit(G, {("t", 0): 1}, member_id=member, generation=generation)
    h.leave(G, member)
    assert _delete(h, ("t", (0,))).topics == (("t", ((0, ErrorCode.NONE),)),)
    assert h.committed(G, ("t", 0)) == {("t", 0): -1}


# ------------------------------------------------------------------------ retention §3.3
def _retention_harness() -> GroupHarness:
    # Retention 1 minute, checked every second.
    return GroupHarness(
        CoordinatorConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    )


def test_simple_group_offsets_expire_by_commit_time_then_group_deleted() -> None:
    """§3.3: no protocolType -> base = commit timestamp; an Empty group whose offsets are all
    gone is deleted."""
    h = _retention_harness()
    h.commit(G, {("a", 0): 1})
    h.advance(30_000)
    h.commit(G, {("b", 0): 1})
    h.advance(30_000)  # t=60 s: a is 60 s old
    assert h.committed(G, ("a", 0), ("b", 0)) == {("a", 0): -1, ("b", 0): 1}
    assert h.core.group(G) is not None
    h.advance(30_000)
    assert h.core.group(G) is None


def test_empty_consumer_group_offsets_expire_from_when_it_became_empty() -> None:
    """§3.3: protocolType present and Empty -> base = currentStateTimestamp (when it became
    Empty), not the commit time."""
    h = _retention_harness()
    (member,), generation = h.form_group(G, 1)
    h.commit(G, {TP: 1}, member_id=member, generation=generation)
    for _ in range(12):  # 120 s in Stable: the offset is subscribed (metadata unparseable)
        h.advance(5000)
        h.heartbeat(G, member, generation)
        h.advance(5000)
        h.heartbeat(G, member, generation)
    assert h.committed(G, TP) == {TP: 1}
    h.leave(G, member)
    emptied = h.clock.now_ms()
    h.advance(59_000)
    assert h.committed(G, TP) == {TP: 1}
    h.advance(60_000 - 59_000)
    assert h.clock.now_ms() == emptied + 60_000
    assert h.committed(G, TP) == {TP: -1}
    assert h.core.group(G) is None  # Empty and no offsets left: deleted


def test_stable_consumer_group_expires_only_unsubscribed_topics() -> None:
    """§3.3: consumer group, subscriptions known, Stable -> base = commit time, only topics
    the group is not subscribed to."""
    h = _retention_harness()
    protocols = (("range", consumer_subscription("t")),)
    (member,), generation = h.form_group(G, 1, protocols=protocols)
    h.commit(G, {("t", 0): 1, ("old", 0): 2}, member_id=member, generation=generation)
    for _ in range(14):
        h.advance(5000)
        h.heartbeat(G, member, generation)
    assert h.committed(G, ("t", 0), ("old", 0)) == {("t", 0): 1, ("old", 0): -1}
    assert h.core.group(G) is not None


def test_rebalancing_group_expires_nothing() -> None:
    """§3.3: anything else (rebalancing) -> nothing expires."""
    h = _retention_harness()
    protocols = (("range", consumer_subscription("t")),)
    (leader, follower), generation = h.form_group(G, 2, protocols=protocols)
    h.commit(G, {("old", 0): 2}, member_id=leader, generation=generation)
    h.join(G, leader, protocols=protocols, rebalance_timeout_ms=600_000)  # PR for 10 minutes
    for _ in range(14):
        h.advance(5000)
        h.heartbeat(G, follower, generation)
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "PreparingRebalance"
    assert h.committed(G, ("old", 0)) == {("old", 0): 2}


def test_explicit_retention_time_v2_to_v4() -> None:
    """§3.1 stored value / §3.3: v2-4 RetentionTimeMs sets an explicit expire timestamp."""
    h = _retention_harness()
    partition = CommitPartition(0, 9)
    h.send(OffsetCommit(G, (CommitTopic("t", (partition,)),), retention_time_ms=5000, version=2))
    h.send(OffsetCommit(G, (CommitTopic("u", (partition,)),), retention_time_ms=5000, version=5))
    h.advance(5000)
    assert h.committed(G, ("t", 0), ("u", 0)) == {("t", 0): -1, ("u", 0): 9}


def test_stored_value_fields_round_trip() -> None:
    """§3.1 stored value: offset, leader epoch (-1 = absent), metadata (null -> "")."""
    h = GroupHarness()
    partitions = (CommitPartition(0, 5, leader_epoch=3, metadata="hello"), CommitPartition(1, 6))
    h.send(OffsetCommit(G, (CommitTopic("t", partitions),)))
    reply = h.reply(h.send(OffsetFetch(G, (("t", (0, 1)),))))
    assert isinstance(reply, OffsetFetchReply)
    ((_, found),) = reply.topics
    assert [(f.offset, f.leader_epoch, f.metadata) for f in found] == [(5, 3, "hello"), (6, -1, "")]


def test_v1_explicit_commit_timestamp_is_the_retention_base() -> None:
    """§3.1 stored value: commitTimestamp = now, except an explicit v1 CommitTimestamp; §3.3
    a simple group's offsets expire retention after their commit timestamp."""
    h = _retention_harness()
    h.advance(30_000)
    explicit = CommitPartition(0, 1, commit_timestamp_ms=0)
    h.send(OffsetCommit(G, (CommitTopic("t", (explicit,)),), version=1))
    h.send(OffsetCommit(G, (CommitTopic("u", (explicit,)),), version=2))
    h.advance(30_000)  # t=60 s: the v1 offset is 60 s old, the v2 one 30 s
    assert h.committed(G, ("t", 0), ("u", 0)) == {("t", 0): -1, ("u", 0): 1}


# ===================================================================== deleted topics
def test_deleted_topics_lose_their_offsets_in_every_group() -> None:
    """Kafka's `onPartitionsDeleted`: every group's offsets of a deleted topic are removed
    (tombstone records, no replies); other topics' offsets and the groups stay."""
    h = GroupHarness()
    h.commit("a", {("gone", 0): 5, ("gone", 1): 6, ("kept", 0): 7})
    h.commit("b", {("gone", 0): 8})
    result = h.core.topics_deleted(["gone"], 0)
    assert not result.replies
    assert sorted((r.group_id, r.topic, r.partition) for r in result.records) == [  # type: ignore[attr-defined]
        ("a", "gone", 0),
        ("a", "gone", 1),
        ("b", "gone", 0),
    ]
    assert h.committed("a", ("gone", 0), ("kept", 0)) == {("gone", 0): -1, ("kept", 0): 7}
    assert h.committed("b", ("gone", 0)) == {("gone", 0): -1}
    assert h.core.group("b") is not None  # removed later by the retention check, as in Kafka
