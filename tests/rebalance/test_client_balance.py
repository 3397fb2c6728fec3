"""Client-balance groups (TubeMQ's ClientBalanceConsumer, spec §D): every check the master and
the brokers make, with the code they answer, and the durable state replayed after a failover."""

from __future__ import annotations

import pytest
from client_balance_harness import SESSION_MS, ClientBalanceHarness

from rebalance.classic.commands import Heartbeat, LeaveGroup, LeavingMember, SyncGroup
from rebalance.classic.replies import HeartbeatReply, LeaveGroupReply, SyncGroupReply
from rebalance.client_balance.commands import PartitionRequest, RegisterPartitions
from rebalance.client_balance.records import ClientBalanceRecord
from rebalance.client_balance.replies import RegisterPartitionsReply
from rebalance.commands import DescribeGroups, ListGroups
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.errors import ErrorCode
from rebalance.event_schema import EventType
from rebalance.replies import DescribeGroupsReply, ListGroupsReply


@pytest.fixture
def h() -> ClientBalanceHarness:
    return ClientBalanceHarness(t=6, u=2)


# ------------------------------------------------------------------------------ joining
def test_first_node_fixes_the_source_count_and_later_nodes_agree(h: ClientBalanceHarness) -> None:
    assert h.join_node("a", 3, 0).error is ErrorCode.NONE
    assert h.join_node("b", 3, 1).error is ErrorCode.NONE
    reply = h.join_node("c", 4, 2)
    assert reply.error is ErrorCode.CLIENT_INCONSISTENT_SOURCECOUNT
    assert int(reply.error) == 429
    assert sorted(h.group().nodes) == ["a", "b"]
    assert h.group().source_count == 3


def test_a_node_id_held_by_another_live_node_is_refused(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 1)
    reply = h.join_node("b", 3, 1)
    assert reply.error is ErrorCode.CLIENT_DUPLICATE_INDEXID
    assert int(reply.error) == 430
    assert "held by a" in (reply.error_message or "")


@pytest.mark.parametrize("node_id", [-1, 3, 7])
def test_node_id_outside_the_source_count_is_a_bad_request(
    h: ClientBalanceHarness, node_id: int
) -> None:
    reply = h.join_node("a", 3, node_id)
    assert reply.error is ErrorCode.BAD_REQUEST
    assert int(reply.error) == 400
    assert h.core.group("g") is None or not h.group().nodes


def test_a_different_topic_set_is_refused(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0, topics=("t",))
    reply = h.join_node("b", 3, 1, topics=("t", "u"))
    assert reply.error is ErrorCode.CLIENT_INCONSISTENT_TOPICSET
    assert int(reply.error) == 425
    # Order and repetition do not matter: it is a set.
    h.join_node("c", 3, 2, topics=("t", "t"))
    assert sorted(h.group().nodes) == ["a", "c"]


@pytest.mark.parametrize("off", [0, -1, -5])
def test_source_count_not_positive_turns_the_count_and_id_checks_off(
    h: ClientBalanceHarness, off: int
) -> None:
    assert h.join_node("a", off, 9).error is ErrorCode.NONE
    assert h.join_node("b", off, 9).error is ErrorCode.NONE  # same node id: no check
    assert h.join_node("c", off - 1 if off <= 0 else 1, 9).error is ErrorCode.NONE
    # The topic set is still checked.
    assert h.join_node("d", off, 0, topics=("u",)).error is ErrorCode.CLIENT_INCONSISTENT_TOPICSET


def test_a_positive_source_count_into_a_group_that_turned_checks_off_is_accepted(
    h: ClientBalanceHarness,
) -> None:
    # TubeMQ checks against the group's source count only when that one is positive.
    h.join_node("a", -1, 0)
    assert h.join_node("b", 3, 0).error is ErrorCode.NONE


def test_an_empty_group_takes_a_new_source_count(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.leave_node("a")
    assert h.join_node("b", 5, 4).error is ErrorCode.NONE
    assert h.group().source_count == 5


def test_the_first_nodes_source_count_stays_until_the_group_empties(
    h: ClientBalanceHarness,
) -> None:
    # TubeMQ's ConsumeGroupInfo keeps the sourceCount addConsumer took from the first consumer
    # until the group is removed empty: the first node turned the checks off, so they stay off.
    h.join_node("a", -1, 0)
    h.join_node("b", 3, 0)
    h.leave_node("a")
    assert h.group().source_count == -1
    assert h.join_node("c", 4, 0).error is ErrorCode.NONE  # no count or id check
    h.failover()
    assert h.group().source_count == -1
    assert h.join_node("d", 7, 0).error is ErrorCode.NONE
    for member in ("b", "c", "d"):
        h.leave_node(member)
    assert h.join_node("e", 2, 1).error is ErrorCode.NONE
    assert int(h.join_node("f", 3, 0).error) == 429


def test_a_rejoin_is_checked_against_the_groups_source_count(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.leave_node("a")
    assert int(h.join_node("b", 4, 1).error) == 429  # b's own re-join, as TubeMQ checks it


def test_a_group_is_one_type_at_a_time(h: ClientBalanceHarness) -> None:
    h.form_group("classic-group", 1)
    reply = h.join_node("a", 3, 0, group="classic-group")
    assert reply.error is ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE
    assert int(reply.error) == 424
    # The other way round, Kafka 4.4's answers to a group of another type (a share group's):
    # TubeMQ would say 424, which Kafka's clients do not know.
    h.join_node("a", 3, 0)
    joined = h.join_reply(h.join("g"))
    assert (joined.error, joined.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    synced = h.reply(h.send(SyncGroup("g", 1, "a", protocol_type="consumer", protocol_name="r")))
    assert isinstance(synced, SyncGroupReply) and synced.error is ErrorCode.UNKNOWN_MEMBER_ID
    alive = h.reply(h.send(Heartbeat("g", 1, "a")))
    assert isinstance(alive, HeartbeatReply) and alive.error is ErrorCode.UNKNOWN_MEMBER_ID
    left = h.reply(h.send(LeaveGroup("g", (LeavingMember("a"),))))
    assert isinstance(left, LeaveGroupReply)
    assert (left.error, [m.error for m in left.members]) == (
        ErrorCode.NONE,
        [ErrorCode.UNKNOWN_MEMBER_ID],
    )
    beat = h.reply(h.send(ConsumerGroupHeartbeat("g", "m", 0, subscribed_topic_names=("t",))))
    assert isinstance(beat, ConsumerGroupHeartbeatReply)
    assert beat.error is ErrorCode.GROUP_ID_NOT_FOUND
    assert h.group().nodes.keys() == {"a"}


def test_an_empty_consumer_group_is_not_taken_over(h: ClientBalanceHarness) -> None:
    h.send(
        ConsumerGroupHeartbeat(
            "kip848",
            "m",
            0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=("t",),
            topic_partitions=(),
        )
    )
    h.send(ConsumerGroupHeartbeat("kip848", "m", -1))
    assert h.core.group("kip848") is not None
    assert h.join_node("a", group="kip848").error is ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE


def test_an_empty_classic_group_with_offsets_becomes_a_client_balance_group(
    h: ClientBalanceHarness,
) -> None:
    assert h.commit("g", {("t", 0): 42}) == {("t", 0): ErrorCode.NONE}
    assert h.join_node("a", 3, 0).error is ErrorCode.NONE
    assert h.group().offsets[("t", 0)].offset == 42
    h.failover()
    assert h.group().nodes.keys() == {"a"}
    assert h.committed("g", ("t", 0)) == {("t", 0): 42}


def test_join_checks_the_session_timeout_and_the_topics(h: ClientBalanceHarness) -> None:
    assert h.join_node("a", session_timeout_ms=10).error is ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join_node("a", topics=()).error is ErrorCode.BAD_REQUEST


def test_a_rejoin_keeps_the_epoch_and_the_partitions(h: ClientBalanceHarness) -> None:
    first = h.join_node("a", 3, 0)
    h.register("a", ("t", 0))
    again = h.join_node("a", 3, 0)
    assert again.member_epoch == first.member_epoch
    assert again.held == (("t", (0,)),)


def test_each_new_node_gets_a_new_epoch(h: ClientBalanceHarness) -> None:
    epochs = [h.join_node(m, 3, i).member_epoch for i, m in enumerate("abc")]
    assert epochs == [1, 2, 3]
    h.leave_node("a")
    assert h.join_node("a", 3, 0).member_epoch == 4  # a new incarnation of the same member id


# --------------------------------------------------------------------------- partitions
def test_register_is_exclusive_while_the_holder_is_live(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    assert h.register("a", ("t", 0)).partitions[0].error is ErrorCode.NONE
    refused = h.register("b", ("t", 0)).partitions[0]
    assert refused.error is ErrorCode.PARTITION_OCCUPIED
    assert int(refused.error) == 410
    assert refused.holder == "a"
    assert h.holders() == {("t", 0): "a"}


def test_registering_a_partition_held_already_succeeds(h: ClientBalanceHarness) -> None:
    h.join_node("a")
    h.register("a", ("t", 0))
    assert h.register("a", ("t", 0)).partitions[0].error is ErrorCode.NONE


def test_a_stale_holder_is_removed_before_the_register(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0))
    h.clock.set(h.clock.now_ms() + SESSION_MS // 2)
    h.beat("b")
    # a's deadline passes; its timer has not fired yet (time moved without firing timers).
    h.clock.set(h.clock.now_ms() + SESSION_MS // 2)
    assert h.register("b", ("t", 0)).partitions[0].error is ErrorCode.NONE
    assert h.holders() == {("t", 0): "b"}
    assert "a" not in h.group().nodes
    expired = [e for e in h.events if e.type is EventType.MEMBER_EXPIRED]
    assert [e.member for e in expired] == ["a"]


def test_a_partition_key_outside_the_nodes_metadata_is_not_found(h: ClientBalanceHarness) -> None:
    # TubeMQ's client answers 404 for a key missing from its partition metadata, which holds
    # the partitions of the node's topics only.
    h.join_node("a", topics=("t",))
    reply = h.register("a", ("t", 6), ("u", 0), ("nope", 0))
    assert [int(p.error) for p in reply.partitions] == [404, 404, 404]
    assert h.holders() == {}


def test_requests_from_an_unknown_node_or_epoch_get_hb_no_node(h: ClientBalanceHarness) -> None:
    h.join_node("a")
    h.epochs["ghost"] = 1
    assert h.register("ghost", ("t", 0)).error is ErrorCode.HB_NO_NODE
    assert int(ErrorCode.HB_NO_NODE) == 411
    h.epochs["a"] += 1
    assert h.beat("a").error is ErrorCode.HB_NO_NODE
    assert h.release("a", ("t", 0)).error is ErrorCode.HB_NO_NODE


def test_bootstrap_offset_replaces_when_not_negative_and_keeps_otherwise(
    h: ClientBalanceHarness,
) -> None:
    h.commit("g", {("t", 0): 5, ("t", 1): 5})  # before any node: a simple group's commit
    h.join_node("a")
    reply = h.register("a", ("t", 0, -1), ("t", 1, 100), ("t", 2, 0), ("t", 3, -1))
    offsets = [(p.partition, p.offset) for p in reply.partitions]
    assert offsets == [(0, 5), (1, 100), (2, 0), (3, -1)]
    assert h.committed("g", ("t", 0), ("t", 1), ("t", 2)) == {
        ("t", 0): 5,
        ("t", 1): 100,
        ("t", 2): 0,
    }


def test_bootstrap_offset_is_clamped_to_the_log_range(h: ClientBalanceHarness) -> None:
    # TubeMQ's DefaultOffsetManager.loadOffset: MixedUtils.mid(offset, logStart, logEnd).
    h.join_node("a")
    requests = (
        PartitionRequest("t", 0, 1000, (4, 20)),
        PartitionRequest("t", 1, 2, (4, 20)),
        PartitionRequest("t", 2, 7, (4, 20)),
        PartitionRequest("t", 3, -1, (4, 20)),
    )
    reply = h.reply(h.send(RegisterPartitions("g", "a", h.epochs["a"], requests)))
    assert isinstance(reply, RegisterPartitionsReply)
    assert [(p.partition, p.offset) for p in reply.partitions] == [
        (0, 20),
        (1, 4),
        (2, 7),
        (3, -1),
    ]
    assert h.committed("g", ("t", 0), ("t", 1)) == {("t", 0): 20, ("t", 1): 4}


def test_release_frees_the_partition(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0))
    # TubeMQ's broker unregister: another holder is DUPLICATE_PARTITION (412), no holder is
    # HB_NO_NODE (411).
    assert int(h.release("b", ("t", 0)).partitions[0].error) == 412
    assert h.holders() == {("t", 0): "a"}
    assert h.release("a", ("t", 0)).partitions[0].error is ErrorCode.NONE
    assert int(h.release("a", ("t", 0)).partitions[0].error) == 411  # a retry
    assert h.register("b", ("t", 0)).partitions[0].error is ErrorCode.NONE


# ---------------------------------------------------------------------------- heartbeats
def test_a_heartbeat_report_is_answered_not_applied(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0), ("t", 1))
    h.register("b", ("t", 2))
    # a's report predates its registration of t-1, and lists t-3 (nobody holds it) and t-2
    # (b's): in TubeMQ only register, release and expiry change holdings.
    reply = h.beat("a", (("t", (0, 2, 3)),))
    assert reply.held == (("t", (0, 1)),)
    assert h.holders() == {("t", 0): "a", ("t", 1): "a", ("t", 2): "b"}
    assert not [e for e in h.events if e.type is EventType.PARTITION_RELEASED]
    # t-3 is still free for anyone.
    assert h.register("b", ("t", 3)).partitions[0].error is ErrorCode.NONE


def test_a_heartbeat_without_a_report_changes_nothing(h: ClientBalanceHarness) -> None:
    h.join_node("a")
    h.register("a", ("t", 0))
    assert h.beat("a").held == (("t", (0,)),)


def test_session_expiry_frees_the_partitions(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0), ("t", 1))
    for _ in range(3):
        h.advance(SESSION_MS // 2)
        h.beat("b")
    assert "a" not in h.group().nodes
    assert h.holders() == {}
    assert h.register("b", ("t", 0)).partitions[0].error is ErrorCode.NONE
    released = [e for e in h.events if e.type is EventType.PARTITION_RELEASED]
    assert {(e.fields["topic_partition"], e.fields["reason"]) for e in released} == {
        (0, "expired"),
        (1, "expired"),
    }


def test_leave_frees_the_partitions_and_the_node_id(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.register("a", ("t", 0))
    assert h.leave_node("a").error is ErrorCode.NONE
    assert h.holders() == {}
    assert h.join_node("b", 3, 0).error is ErrorCode.NONE
    assert h.leave_node("ghost").error is ErrorCode.HB_NO_NODE


# ------------------------------------------------------------------------------- offsets
def test_only_the_holder_commits(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0))
    h.register("b", ("t", 1))
    assert h.commit("g", {("t", 0): 7}, member_id="a", generation=1, version=9) == {
        ("t", 0): ErrorCode.NONE
    }
    outcome = h.commit(
        "g", {("t", 0): 9, ("t", 1): 9, ("t", 2): 9}, member_id="b", generation=2, version=9
    )
    assert outcome == {
        ("t", 0): ErrorCode.FENCED_MEMBER_EPOCH,
        ("t", 1): ErrorCode.NONE,
        ("t", 2): ErrorCode.FENCED_MEMBER_EPOCH,
    }
    assert h.committed("g", ("t", 0), ("t", 1)) == {("t", 0): 7, ("t", 1): 9}


def test_a_node_that_lost_its_partition_cannot_commit_it(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.register("a", ("t", 0))
    h.release("a", ("t", 0))
    assert h.commit("g", {("t", 0): 3}, member_id="a", generation=1, version=9) == {
        ("t", 0): ErrorCode.FENCED_MEMBER_EPOCH
    }
    assert h.commit("g", {("t", 0): 3}, member_id="a", generation=5, version=9) == {
        ("t", 0): ErrorCode.STALE_MEMBER_EPOCH
    }
    assert h.commit("g", {("t", 0): 3}, member_id="x", generation=1, version=9) == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }


def test_an_expired_holder_cannot_commit_even_before_its_timer_fires(
    h: ClientBalanceHarness,
) -> None:
    h.join_node("a", 3, 0)
    h.register("a", ("t", 0))
    h.clock.set(h.clock.now_ms() + SESSION_MS)
    assert h.commit("g", {("t", 0): 3}, member_id="a", generation=1, version=9) == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }


def test_an_empty_group_takes_anonymous_commits(h: ClientBalanceHarness) -> None:
    h.join_node("a")
    h.leave_node("a")
    assert h.commit("g", {("t", 0): 3}) == {("t", 0): ErrorCode.NONE}


# ---------------------------------------------------------------- durability and views
def test_failover_replays_nodes_epochs_and_holders(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0), ("t", 3, 11))
    h.register("b", ("t", 1))
    h.release("a", ("t", 3))
    before = h.describe_cb()
    assert any(isinstance(r, ClientBalanceRecord) for r in h.records)
    h.failover()
    assert h.describe_cb() == before
    assert h.holders() == {("t", 0): "a", ("t", 1): "b"}
    assert h.join_node("c", 3, 2).member_epoch == 3
    # Sessions run again from load time: a and b expire unless they heartbeat.
    h.advance(SESSION_MS // 2)
    h.beat("c")
    h.advance(SESSION_MS // 2)
    assert set(h.group().nodes) == {"c"}
    assert h.holders() == {}


def test_describe_shows_each_node(h: ClientBalanceHarness) -> None:
    h.join_node("b", 3, 1, topics=("t", "u"))
    h.join_node("a", 3, 0, topics=("t", "u"))
    h.register("a", ("t", 0), ("u", 1))
    described = h.describe_cb()
    assert described.error is ErrorCode.NONE
    assert described.state == "Stable"
    assert described.source_count == 3
    assert [(n.member_id, n.node_id, n.source_count, n.held) for n in described.nodes] == [
        ("a", 0, 3, (("t", (0,)), ("u", (1,)))),
        ("b", 1, 3, ()),
    ]
    assert h.describe_cb("nope").error is ErrorCode.GROUP_ID_NOT_FOUND


def test_describe_groups_and_list_groups(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.register("a", ("t", 2))
    reply = h.reply(h.send(DescribeGroups(("g",))))
    assert isinstance(reply, DescribeGroupsReply)
    group = reply.groups[0]
    assert (group.state, group.protocol_type) == ("Stable", "client-balance")
    assert [m.member_id for m in group.members] == ["a"]
    listed = h.reply(h.send(ListGroups()))
    assert isinstance(listed, ListGroupsReply)
    assert [(g.group_id, g.group_type, g.state) for g in listed.groups] == [
        ("g", "client-balance", "Stable")
    ]


def test_delete_groups_needs_an_empty_group(h: ClientBalanceHarness) -> None:
    from rebalance.commands import DeleteGroups
    from rebalance.replies import DeleteGroupsReply

    h.join_node("a")
    reply = h.reply(h.send(DeleteGroups(("g",))))
    assert isinstance(reply, DeleteGroupsReply)
    assert reply.results == (("g", ErrorCode.NON_EMPTY_GROUP),)
    h.leave_node("a")
    reply = h.reply(h.send(DeleteGroups(("g",))))
    assert isinstance(reply, DeleteGroupsReply)
    assert reply.results == (("g", ErrorCode.NONE),)
    h.failover()
    assert h.core.group("g") is None


def test_every_event_fits_the_schema(h: ClientBalanceHarness) -> None:
    h.join_node("a", 3, 0)
    h.join_node("b", 3, 1)
    h.register("a", ("t", 0, 4))
    h.release("a", ("t", 0))
    h.register("b", ("t", 0))
    h.leave_node("b")
    h.advance(SESSION_MS)
    types = {e.type for e in h.events}
    assert {
        EventType.MEMBER_JOINED,
        EventType.MEMBER_LEFT,
        EventType.MEMBER_EXPIRED,
        EventType.PARTITION_REGISTERED,
        EventType.PARTITION_RELEASED,
    } <= types
    assert all(e.fields.get("group_type") == "client-balance" for e in h.events if e.group == "g")
    assert h.bad_events() == []
