"""KIP-848 consumer groups in the core: spec §7, Kafka's `GroupMetadataManager` rules."""

from __future__ import annotations

import pytest
from consumer_harness import Client, ConsumerHarness, topic_id

from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, LeavingMember, SyncGroup
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    SyncGroupReply,
)
from rebalance.commands import (
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    ListGroups,
    OffsetCommit,
    OffsetFetch,
)
from rebalance.config import MIGRATION_POLICIES, ConfigError, CoordinatorConfig
from rebalance.consumer_group.commands import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from rebalance.consumer_group.group import MemberState
from rebalance.consumer_group.replies import ConsumerGroupDescribeReply
from rebalance.errors import ErrorCode
from rebalance.event_schema import EventType, check_event
from rebalance.replies import (
    DeleteGroupsReply,
    FetchedOffset,
    ListGroupsReply,
    OffsetCommitReply,
    OffsetFetchReply,
)
from rebalance.topics import TopicInfo, TopicMetadata

G = "g"
T = topic_id("t")


def owners(h: ConsumerHarness, group_id: str = G) -> dict[tuple[str, int], list[str]]:
    """Every partition the coordinator counts as held, with who holds it."""
    held: dict[tuple[str, int], list[str]] = {}
    for member in h.group(group_id).members.values():
        for partitions in (member.assigned, member.pending_revocation):
            for t, ps in partitions.items():
                for p in ps:
                    held.setdefault((t, p), []).append(member.member_id)
    return held


# ================================================================================ joining
def test_first_heartbeat_joins_with_epoch_one_and_the_whole_topic() -> None:
    h = ConsumerHarness(t=3)
    reply = h.join(G, "m1")
    assert reply.error is ErrorCode.NONE
    assert (reply.member_id, reply.member_epoch) == ("m1", 2)
    assert reply.assignment == ((T, (0, 1, 2)),)
    assert reply.heartbeat_interval_ms == 5000
    group = h.group(G)
    assert (group.group_epoch, group.target_epoch, group.kafka_state) == (2, 2, "Stable")


def test_v1_member_id_is_the_clients_and_must_not_be_empty() -> None:
    h = ConsumerHarness(t=1)
    reply = h.join(G, "")
    assert reply.error is ErrorCode.INVALID_REQUEST
    assert reply.error_message == "MemberId can't be empty."


def test_v0_member_id_is_chosen_by_the_coordinator() -> None:
    h = ConsumerHarness(t=1)
    reply = h.join(G, "", version=0)
    assert reply.error is ErrorCode.NONE
    assert reply.member_id and reply.member_id in h.group(G).members


def test_a_join_to_a_topic_that_does_not_exist_yet_gets_nothing_until_it_does() -> None:
    h = ConsumerHarness()
    reply = h.join(G, "m1")
    assert (reply.member_epoch, reply.assignment) == (2, ())
    h.set_topics(t=2)
    assert h.group(G).group_epoch == 2  # until a heartbeat refreshes the metadata
    reply = h.hb(ConsumerGroupHeartbeat(G, "m1", 2, topic_partitions=()))
    assert (reply.member_epoch, reply.assignment) == (3, ((T, (0, 1)),))


# ============================================================================= validation
def _join(**fields: object) -> ConsumerGroupHeartbeat:
    base: dict[str, object] = {
        "group_id": G,
        "member_id": "m1",
        "member_epoch": 0,
        "rebalance_timeout_ms": 5000,
        "subscribed_topic_names": ("t",),
        "topic_partitions": (),
    }
    base.update(fields)
    return ConsumerGroupHeartbeat(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("command", "error", "message"),
    [
        (_join(group_id=" "), ErrorCode.INVALID_REQUEST, "GroupId can't be empty."),
        (_join(instance_id=""), ErrorCode.INVALID_REQUEST, "InstanceId can't be empty."),
        (_join(rack_id="\t"), ErrorCode.INVALID_REQUEST, "RackId can't be empty."),
        (
            _join(rebalance_timeout_ms=-1),
            ErrorCode.INVALID_REQUEST,
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        (
            _join(topic_partitions=None),
            ErrorCode.INVALID_REQUEST,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            _join(topic_partitions=((T, (0,)),)),
            ErrorCode.INVALID_REQUEST,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            _join(subscribed_topic_names=None),
            ErrorCode.INVALID_REQUEST,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
            "(re-)joining.",
        ),
        (
            ConsumerGroupHeartbeat(G, "m1", -2),
            ErrorCode.INVALID_REQUEST,
            "InstanceId can't be null.",
        ),
        (ConsumerGroupHeartbeat(G, "m1", -3), ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
        (
            ConsumerGroupHeartbeat(G, "", 3, version=0),
            ErrorCode.INVALID_REQUEST,
            "MemberId can't be empty.",
        ),
        (
            _join(server_assignor="sticky"),
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        ),
    ],
)
def test_malformed_heartbeats_are_refused_as_kafka_refuses_them(
    command: ConsumerGroupHeartbeat, error: ErrorCode, message: str
) -> None:
    h = ConsumerHarness(t=1)
    reply = h.hb(command)
    assert (reply.error, reply.error_message) == (error, message)
    assert G not in h.core.groups()


def test_an_invalid_regex_is_invalid_regular_expression() -> None:
    reply = ConsumerHarness(t=1).hb(_join(subscribed_topic_regex="t("))
    assert reply.error is ErrorCode.INVALID_REGULAR_EXPRESSION


def test_a_regex_subscribes_to_every_topic_it_fully_matches() -> None:
    h = ConsumerHarness(orders=1, orders_eu=1, audit=1)
    reply = h.hb(_join(subscribed_topic_names=(), subscribed_topic_regex="orders.*"))
    assert reply.assignment == ((topic_id("orders"), (0,)), (topic_id("orders_eu"), (0,)))


# ======================================================================== reconciliation
def test_a_second_member_gets_partitions_only_after_the_first_released_them() -> None:
    h = ConsumerHarness(t=4)
    a = Client(h, G, "a")
    b = Client(h, G, "b")
    a.heartbeat()
    assert a.owned == {T: {0, 1, 2, 3}}
    reply = b.heartbeat()  # group epoch 2; b's target partitions are still a's
    assert (reply.member_epoch, reply.assignment) == (3, ())
    assert h.group(G).members["b"].state is MemberState.UNRELEASED_PARTITIONS
    reply = a.heartbeat()  # a is asked to revoke: its reply lists what it keeps
    assert reply.member_epoch == 2
    assert h.group(G).members["a"].state is MemberState.UNREVOKED_PARTITIONS
    kept = a.owned[T]
    assert len(kept) == 2
    reply = b.heartbeat()  # a has not acknowledged: nothing for b yet
    assert reply.assignment is None and b.owned == {}
    assert all(len(holders) == 1 for holders in owners(h).values())
    reply = a.heartbeat()  # the acknowledgement (owned = kept) moves a to epoch 2
    assert (reply.member_epoch, h.group(G).members["a"].state) == (3, MemberState.STABLE)
    reply = b.heartbeat()
    assert reply.member_epoch == 3
    assert b.owned == {T: {0, 1, 2, 3} - kept}
    assert h.group(G).kafka_state == "Stable"


def test_members_not_involved_keep_their_partitions_and_epoch_moves_without_a_barrier() -> None:
    h = ConsumerHarness(t=6)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    a.heartbeat()
    b.heartbeat()
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    before = {c.member_id: set(c.owned[T]) for c in (a, b)}
    c = Client(h, G, "c")
    c.heartbeat()
    for client in (a, b):
        reply = client.heartbeat()
        # revoke-only step: each keeps a subset of what it had; nobody gains yet
        assert client.owned[T] <= before[client.member_id]
        assert reply.error is ErrorCode.NONE


def test_the_assignment_is_sent_only_when_it_changed_or_on_a_full_request() -> None:
    h = ConsumerHarness(t=2)
    h.join(G, "m1")
    reply = h.hb(ConsumerGroupHeartbeat(G, "m1", 2))
    assert reply.assignment is None
    full = ConsumerGroupHeartbeat(
        G,
        "m1",
        2,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=("t",),
        topic_partitions=((T, (0, 1)),),
    )
    assert h.hb(full).assignment == ((T, (0, 1)),)
    # Kafka's full request needs the topic names: a regex member's is never one, except a join.
    h.hb(_join(member_id="m2", subscribed_topic_names=None, subscribed_topic_regex="t"))
    owned = h.group(G).members["m2"].current_value().assigned
    regex = ConsumerGroupHeartbeat(
        G, "m2", 3, rebalance_timeout_ms=30000, subscribed_topic_regex="t", topic_partitions=owned
    )
    assert h.hb(regex).assignment is None


def test_range_and_uniform_are_chosen_by_the_members() -> None:
    h = ConsumerHarness(a=3, b=3)
    h.join(G, "m1", ("a", "b"), server_assignor="range")
    h.join(G, "m2", ("a", "b"), server_assignor="range")
    target = h.group(G).target
    # range: per topic, the first member gets the extra partition of each topic
    assert target["m1"] == {topic_id("a"): {0, 1}, topic_id("b"): {0, 1}}
    assert target["m2"] == {topic_id("a"): {2}, topic_id("b"): {2}}
    events = [e for e in h.events if e.type is EventType.TARGET_ASSIGNMENT]
    assert events[-1].fields["assignor"] == "range"


# ================================================================================ fencing
def test_unknown_group_and_unknown_member() -> None:
    h = ConsumerHarness(t=1)
    reply = h.hb(ConsumerGroupHeartbeat(G, "m1", 1))
    assert (reply.error, reply.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Consumer group g not found.",
    )
    h.join(G, "m1")
    assert h.hb(ConsumerGroupHeartbeat(G, "ghost", 1)).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_member_epoch_fencing() -> None:
    h = ConsumerHarness(t=2)
    a = Client(h, G, "a")
    a.heartbeat()  # epoch 1
    assert h.hb(ConsumerGroupHeartbeat(G, "a", 3)).error is ErrorCode.FENCED_MEMBER_EPOCH
    Client(h, G, "b").heartbeat()  # group epoch 2
    a.heartbeat()
    a.heartbeat()  # a reaches epoch 2, previous epoch 1
    assert h.group(G).members["a"].member_epoch == 3
    # the previous epoch with a subset of the current partitions: the bump was lost, accepted
    ok = h.hb(ConsumerGroupHeartbeat(G, "a", 2, topic_partitions=a.owned_tuple()))
    assert ok.error is ErrorCode.NONE
    # the previous epoch claiming a partition it no longer has, or an older epoch: fenced
    other = ((T, (0, 1)),)
    assert h.hb(ConsumerGroupHeartbeat(G, "a", 2, topic_partitions=other)).error is (
        ErrorCode.FENCED_MEMBER_EPOCH
    )
    assert h.hb(ConsumerGroupHeartbeat(G, "a", 0 + 1, topic_partitions=None)).error is (
        ErrorCode.FENCED_MEMBER_EPOCH
    )


def test_group_max_size() -> None:
    config = CoordinatorConfig.from_properties({"group.consumer.max.size": "1"})
    h = ConsumerHarness(config, t=1)
    h.join(G, "a")
    reply = h.join(G, "b")
    assert reply.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert (
        reply.error_message == "The consumer group has reached its maximum capacity of 1 members."
    )


def test_a_full_group_refuses_any_member_id_it_does_not_hold() -> None:
    """Kafka checks the size before it looks the member up (`throwIfConsumerGroupIsFull`): in
    a full group an unknown member's heartbeat is GROUP_MAX_SIZE_REACHED, not
    UNKNOWN_MEMBER_ID, and so is a new static incarnation even after the old one left with
    -2; the members it holds go on, and a leave is answered."""
    config = CoordinatorConfig.from_properties({"group.consumer.max.size": "1"})
    h = ConsumerHarness(config, t=1)
    h.join(G, "a", instance_id="i1")
    unknown = h.hb(ConsumerGroupHeartbeat(G, "x", 2, topic_partitions=()))
    assert unknown.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.hb(ConsumerGroupHeartbeat(G, "a", 2, instance_id="i1")).error is ErrorCode.NONE
    left = h.hb(ConsumerGroupHeartbeat(G, "a", -2, instance_id="i1"))
    assert left.error is ErrorCode.NONE
    assert h.join(G, "a2", instance_id="i1").error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert set(h.group(G).members) == {"a"}


# ================================================================================ leaving
def test_leave_gives_the_partitions_to_the_others_and_bumps_the_epoch() -> None:
    h = ConsumerHarness(t=2)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    epoch = h.group(G).group_epoch
    reply = a.leave()
    assert (reply.error, reply.member_epoch, reply.member_id) == (ErrorCode.NONE, -1, "a")
    assert h.group(G).group_epoch == epoch + 1
    b.heartbeat()
    assert b.owned == {T: {0, 1}}
    assert h.hb(ConsumerGroupHeartbeat(G, "a", -1)).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_departure_bumps_the_epoch_and_the_next_heartbeat_computes_the_target() -> None:
    # Kafka's consumerGroupFenceMember (leave, session or revocation timeout) writes the
    # removal and the group epoch only; a remaining member's next heartbeat finds the target
    # behind the group epoch and computes it. Meanwhile the group is Assigning.
    h = ConsumerHarness(t=2)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    group = h.group(G)
    epoch = group.group_epoch
    assert (group.target_epoch, group.kafka_state) == (epoch, "Stable")
    a.leave()
    assert (group.group_epoch, group.target_epoch, group.kafka_state) == (
        epoch + 1, epoch, "Assigning"
    )  # fmt: skip
    b.heartbeat()
    assert (group.target_epoch, group.target["b"]) == (epoch + 1, {T: {0, 1}})
    assert b.owned == {T: {0, 1}}
    # The last member leaving: the group is Empty, its assignment epoch caught up with the
    # group epoch (Kafka 4.3, KAFKA-20442), also after a reload; a classic member's LeaveGroup
    # emptying the group likewise.
    b.leave()
    assert (group.group_epoch, group.target_epoch, group.kafka_state) == (
        epoch + 2, epoch + 2, "Empty"
    )  # fmt: skip
    h.failover()
    assert (h.group(G).group_epoch, h.group(G).target_epoch) == (epoch + 2, epoch + 2)
    reply = h.reply(h.send(ConsumerGroupDescribe((G,))))
    assert isinstance(reply, ConsumerGroupDescribeReply)
    assert (reply.groups[0].group_epoch, reply.groups[0].assignment_epoch) == (
        epoch + 2,
        epoch + 2,
    )


def test_static_member_leaves_temporarily_and_its_successor_inherits_its_partitions() -> None:
    h = ConsumerHarness(t=2)
    h.join(G, "a1", instance_id="i")
    h.join(G, "b", instance_id="j")
    # the instance id is held by an active member: nobody else may claim it
    reply = h.join(G, "a2", instance_id="i")
    assert reply.error is ErrorCode.UNRELEASED_INSTANCE_ID
    # a heartbeat from a member id the group lacks, naming the held instance id: Kafka looks
    # the instance id up first (FENCED_INSTANCE_ID, checked against Kafka 4.4)
    assert h.hb(ConsumerGroupHeartbeat(G, "a2", 1, instance_id="i")).error is (
        ErrorCode.FENCED_INSTANCE_ID
    )
    assert h.hb(ConsumerGroupHeartbeat(G, "b", 2, instance_id="i")).error is (
        ErrorCode.FENCED_INSTANCE_ID
    )
    before = dict(h.group(G).target["a1"])
    epoch = h.group(G).group_epoch
    reply = h.hb(ConsumerGroupHeartbeat(G, "a1", -2, instance_id="i"))
    assert (reply.error, reply.member_epoch) == (ErrorCode.NONE, -2)
    assert h.group(G).group_epoch == epoch  # a temporary leave moves nothing
    reply = h.join(G, "a2", instance_id="i")
    assert reply.error is ErrorCode.NONE
    group = h.group(G)
    assert "a1" not in group.members and group.target["a2"] == before
    assert group.group_epoch == epoch


def test_a_static_members_leave_is_checked_by_instance_id_and_releases_what_it_revoked() -> None:
    """Kafka's `consumerGroupLeave`: with an instance id, a leave (-1 or -2) is checked against
    the instance's holder (FENCED_INSTANCE_ID for another member id, UNKNOWN_MEMBER_ID for an
    unknown instance); a temporary leave (-2) drops the partitions the member was revoking
    (`consumerGroupStaticMemberGroupLeave`), so the member waiting for them gets them."""
    h = ConsumerHarness(t=2)
    h.join(G, "a", instance_id="i")
    fenced = h.hb(ConsumerGroupHeartbeat(G, "x", -1, instance_id="i"))
    assert fenced.error is ErrorCode.FENCED_INSTANCE_ID
    unknown = h.hb(ConsumerGroupHeartbeat(G, "a", -1, instance_id="nobody"))
    assert unknown.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert set(h.group(G).members) == {"a"}
    b = Client(h, G, "b")
    b.heartbeat()  # b's target has a partition a still holds
    h.hb(ConsumerGroupHeartbeat(G, "a", 2, instance_id="i", topic_partitions=((T, (0, 1)),)))
    assert h.group(G).members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert b.owned == {}
    left = h.hb(ConsumerGroupHeartbeat(G, "a", -2, instance_id="i"))
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -2)
    assert h.group(G).members["a"].pending_revocation == {}
    b.heartbeat()
    assert sum(map(len, b.owned.values())) == 1


# ================================================================================= timers
def test_a_silent_member_is_fenced_when_its_session_expires() -> None:
    h = ConsumerHarness(t=2)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    h.advance(30_000)
    a.heartbeat()
    h.advance(20_000)  # b's 45 s session is over, a's is not
    assert set(h.group(G).members) == {"a"}
    expired = [e for e in h.events if e.type is EventType.MEMBER_EXPIRED]
    assert expired[-1].member == "b" and expired[-1].fields["reason"] == "session_timeout"
    a.heartbeat()
    assert a.owned == {T: {0, 1}}


def test_a_member_that_revoked_moves_one_epoch_on_while_the_target_asks_for_more() -> None:
    """Kafka's `CurrentAssignmentBuilder`: a member out of UNREVOKED_PARTITIONS continues from
    min(its epoch + 1, the target's), so a second revocation asked for meanwhile is awaited at
    that next epoch; each new state records the epoch it came from (`updateMemberEpoch`), so
    the epoch before it is the only older one a heartbeat may still carry."""
    h = ConsumerHarness(t=6)
    a = Client(h, G, "a")
    a.heartbeat()
    assert a.epoch == 2
    h.join(G, "b")  # epoch 3: a must give three partitions up
    a.heartbeat()
    member = h.group(G).members["a"]
    assert (member.state, member.member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 2)
    kept = a.owned_tuple()
    h.join(G, "c")  # epoch 4: a keeps two, while it still revokes for epoch 3
    reply = h.hb(ConsumerGroupHeartbeat(G, "a", 2, topic_partitions=kept))
    member = h.group(G).members["a"]
    assert (member.state, member.member_epoch, member.previous_member_epoch) == (
        MemberState.UNREVOKED_PARTITIONS,
        3,
        2,
    )
    assert reply.member_epoch == 3 and sum(len(ps) for _, ps in reply.assignment or ()) == 2
    a.epoch, a.owned = 3, {t: set(ps) for t, ps in reply.assignment or ()}
    a.heartbeat()
    assert (a.epoch, h.group(G).members["a"].previous_member_epoch) == (4, 3)
    stale = h.hb(ConsumerGroupHeartbeat(G, "a", 2, topic_partitions=a.owned_tuple()))
    assert stale.error is ErrorCode.FENCED_MEMBER_EPOCH


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() -> None:
    h = ConsumerHarness(t=2)
    a = Client(h, G, "a")
    a.heartbeat()
    b = Client(h, G, "b")
    b.heartbeat()
    # a heartbeats (keeping its session) but never acknowledges the revocation
    h.hb(ConsumerGroupHeartbeat(G, "a", 2))
    assert h.group(G).members["a"].state is MemberState.UNREVOKED_PARTITIONS
    for _ in range(3):
        h.advance(10_000)
        h.hb(ConsumerGroupHeartbeat(G, "a", 2, topic_partitions=((T, (0, 1)),)))
        b.heartbeat()
    assert "a" not in h.group(G).members
    assert b.owned == {T: {0, 1}}
    expired = [e for e in h.events if e.type is EventType.MEMBER_EXPIRED]
    assert expired[-1].fields["reason"] == "revocation_timeout"


# =============================================================================== metadata
def test_partitions_added_and_topic_deleted_bump_the_epoch() -> None:
    h = ConsumerHarness(t=2)
    a = Client(h, G, "a")
    a.heartbeat()
    h.set_topics(t=4)
    a.heartbeat()
    assert h.group(G).group_epoch == 3
    assert a.owned == {T: {0, 1, 2, 3}}
    h.set_topics()
    a.heartbeat()
    assert h.group(G).group_epoch == 4
    a.heartbeat()
    assert a.owned == {}
    bumps = [e.fields["trigger"] for e in h.events if e.type is EventType.GROUP_EPOCH_BUMPED]
    assert bumps == ["member_joined", "metadata_changed", "metadata_changed"]


def test_a_topic_change_bumps_the_epoch_at_the_next_heartbeat() -> None:
    """Kafka's `onNewMetadataImage` only asks the groups subscribed to a changed topic for a
    metadata refresh; the next heartbeat of any member finds the metadata expired, bumps the
    group epoch and computes the target. Until then ConsumerGroupDescribe shows the old epoch,
    Stable, and nothing is written."""
    h = ConsumerHarness(t=2)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    assert h.group(G).kafka_state == "Stable"
    epoch, records = h.group(G).group_epoch, len(h.records)
    h.set_topics(t=4)
    reply = h.reply(h.send(ConsumerGroupDescribe((G,))))
    assert isinstance(reply, ConsumerGroupDescribeReply)
    (described,) = reply.groups
    assert (described.group_epoch, described.assignment_epoch, described.state) == (
        epoch,
        epoch,
        "Stable",
    )
    assert len(h.records) == records
    b.heartbeat()  # b's heartbeat refreshes: a new epoch and its target, b gets its share
    assert (h.group(G).group_epoch, h.group(G).target_epoch) == (epoch + 1, epoch + 1)
    assert b.epoch == epoch + 1 and sum(map(len, b.owned.values())) == 2
    a.heartbeat()
    assert a.epoch == epoch + 1 and sum(map(len, a.owned.values())) == 2
    bumps = [e.fields["trigger"] for e in h.events if e.type is EventType.GROUP_EPOCH_BUMPED]
    assert bumps[-1] == "metadata_changed" and bumps.count("metadata_changed") == 1


def test_a_loaded_group_computes_nothing_until_a_heartbeat() -> None:
    """Kafka's `onLoaded` schedules the sessions (and revocation timeouts) only: a group
    loaded behind its target (a member left just before the move) or whose topics changed
    while nobody owned it is brought up to date by its first heartbeat."""
    h = ConsumerHarness(t=4)
    a, b, c = Client(h, G, "a"), Client(h, G, "b"), Client(h, G, "c")
    for _ in range(3):
        for client in (a, b, c):
            client.heartbeat()
    c.leave()  # the group epoch moves; the target waits for a heartbeat
    epoch = h.group(G).group_epoch
    assert h.group(G).target_epoch == epoch - 1
    h.metadata = TopicMetadata.of([TopicInfo("t", T, 6)])  # grown while unowned
    records = len(h.records)
    h.failover()
    assert len(h.records) == records
    group = h.group(G)
    assert (group.group_epoch, group.target_epoch, group.kafka_state) == (
        epoch,
        epoch - 1,
        "Assigning",
    )
    a.heartbeat()  # the metadata moved: one more epoch, and its target
    assert (h.group(G).group_epoch, h.group(G).target_epoch) == (epoch + 1, epoch + 1)


def test_topics_nobody_subscribes_to_do_not_bump() -> None:
    h = ConsumerHarness(t=2)
    h.join(G, "a")
    h.set_topics(t=2, other=5)
    assert h.group(G).group_epoch == 2


# ============================================================================= durability
def test_replaying_the_records_rebuilds_the_same_group() -> None:
    h = ConsumerHarness(t=4)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    a.heartbeat()
    b.heartbeat()
    a.heartbeat()  # a is mid-revocation when the coordinator moves

    def snapshot() -> object:
        g = h.group(G)
        return (
            g.group_epoch,
            g.target_epoch,
            g.subscribed_metadata,
            g.target,
            dict(g.partition_owners),
            {m.member_id: (m.current_value(), m.subscription_value()) for m in g.members.values()},
        )

    before = snapshot()
    h.failover()
    assert snapshot() == before
    assert h.group(G).members["a"].state is MemberState.UNREVOKED_PARTITIONS
    a.heartbeat()
    b.heartbeat()
    assert a.owned[T].isdisjoint(b.owned[T]) and a.owned[T] | b.owned[T] == {0, 1, 2, 3}


# ================================================================================== admin
def test_states_listing_and_deletion() -> None:
    h = ConsumerHarness(t=2)
    a, b = Client(h, G, "a"), Client(h, G, "b")
    a.heartbeat()
    b.heartbeat()

    def listed() -> tuple[str, str]:
        reply = h.reply(h.send(ListGroups()))
        assert isinstance(reply, ListGroupsReply)
        (group,) = reply.groups
        return group.state, group.group_type

    assert listed() == ("Reconciling", "consumer")
    for _ in range(2):  # a revokes, then acknowledges; b then receives
        a.heartbeat()
        b.heartbeat()
    assert listed() == ("Stable", "consumer")
    reply = h.reply(h.send(DeleteGroups((G,))))
    assert reply == DeleteGroupsReply(((G, ErrorCode.NON_EMPTY_GROUP),))
    a.leave()
    b.leave()
    assert listed() == ("Empty", "consumer")
    assert h.reply(h.send(DeleteGroups((G,)))) == DeleteGroupsReply(((G, ErrorCode.NONE),))
    assert G not in h.core.groups()
    h.failover()
    assert G not in h.core.groups()


def test_classic_sync_and_heartbeat_to_a_consumer_group_are_unknown_members() -> None:
    """From a member that uses the consumer protocol (or none), Kafka's answer is
    UNKNOWN_MEMBER_ID, or FENCED_INSTANCE_ID for an instance id another member id holds;
    classic members of a consumer group: `test_consumer_group_migration.py`."""
    h = ConsumerHarness(t=1)
    h.join(G, "a", instance_id="i1")
    for member, instance, error in (
        ("a", None, ErrorCode.UNKNOWN_MEMBER_ID),
        ("a", "i1", ErrorCode.UNKNOWN_MEMBER_ID),
        ("b", "i1", ErrorCode.FENCED_INSTANCE_ID),
        ("b", "i2", ErrorCode.UNKNOWN_MEMBER_ID),
    ):
        beat = h.reply(h.send(Heartbeat(G, 1, member, instance)))
        assert beat == HeartbeatReply(error)
        synced = h.reply(h.send(SyncGroup(G, 1, member, (), instance, "consumer", "range")))
        assert synced == SyncGroupReply(error)


def test_leave_group_by_instance_id_removes_a_static_consumer_member() -> None:
    """The admin client's removal of static members (LeaveGroup, instance id, no member id)
    works on consumer groups: the member is removed and the epoch bumps once."""
    h = ConsumerHarness(t=2)
    for member, instance in (("a", "i1"), ("b", "i2"), ("c", None)):
        h.join(G, member, instance_id=instance)
    epoch = h.group(G).group_epoch
    leaving = (
        LeavingMember("", "i1"),
        LeavingMember("x", "i2"),  # another member id: fenced
        LeavingMember("c"),  # not a classic member
        LeavingMember("", "nobody"),
    )
    reply = h.reply(h.send(LeaveGroup(G, leaving)))
    assert reply == LeaveGroupReply(
        ErrorCode.NONE,
        (
            LeftMember("", "i1", ErrorCode.NONE),
            LeftMember("x", "i2", ErrorCode.FENCED_INSTANCE_ID),
            LeftMember("c", None, ErrorCode.UNKNOWN_MEMBER_ID),
            LeftMember("", "nobody", ErrorCode.UNKNOWN_MEMBER_ID),
        ),
    )
    assert set(h.group(G).members) == {"b", "c"} and h.group(G).group_epoch == epoch + 1
    left = [e for e in h.events if e.type is EventType.MEMBER_LEFT]
    assert left[-1].member == "a" and left[-1].fields["reason"] == "admin_removal"
    h.failover()
    assert set(h.group(G).members) == {"b", "c"}


def test_a_classic_join_to_an_empty_consumer_group_makes_it_classic_and_keeps_its_offsets() -> None:
    """Kafka's `maybeDeleteEmptyConsumerGroup`, under every migration policy: the consumer
    group's records are deleted, the offsets stay, the classic group forms; and back again."""
    for policy in MIGRATION_POLICIES:
        config = CoordinatorConfig.from_properties({"group.consumer.migration.policy": policy})
        h = ConsumerHarness(config, t=1)
        h.join(G, "a")
        h.send(OffsetCommit(G, (CommitTopic("t", (CommitPartition(0, 42),)),), 2, "a"))
        h.hb(ConsumerGroupHeartbeat(G, "a", -1))
        known = h.reply(h.send(JoinGroup(G, "m-1", "consumer", (("range", b"m"),), 10000, 10000)))
        assert known == JoinGroupReply(ErrorCode.UNKNOWN_MEMBER_ID, member_id="m-1")
        assert h.core.group(G).group_type == "consumer"  # a known id converts nothing
        token = h.send(JoinGroup(G, "", "consumer", (("range", b"m"),), 10000, 10000, version=3))
        h.advance(h.config.group_initial_rebalance_delay_ms)
        joined = h.reply(token)
        assert isinstance(joined, JoinGroupReply) and joined.error is ErrorCode.NONE
        assert h.core.group(G).group_type == "classic"
        assert h.core.group(G).offsets[("t", 0)].offset == 42
        h.failover()
        assert h.core.group(G).group_type == "classic"
        assert h.core.group(G).offsets[("t", 0)].offset == 42
        # The classic member leaves; a KIP-848 member turns the empty group back.
        h.send(LeaveGroup(G, (LeavingMember(joined.member_id),)))
        assert h.join(G, "b").error is ErrorCode.NONE
        assert h.group(G).offsets[("t", 0)].offset == 42


def test_an_empty_classic_group_becomes_a_consumer_group_and_keeps_its_offsets() -> None:
    h = ConsumerHarness(t=1)
    commit = OffsetCommit(G, (CommitTopic("t", (CommitPartition(0, 42),)),))
    h.send(commit)
    assert h.core.group(G).group_type == "classic"
    assert h.join(G, "a").error is ErrorCode.NONE
    assert h.group(G).offsets[("t", 0)].offset == 42
    h.failover()
    assert h.group(G).offsets[("t", 0)].offset == 42
    assert set(h.group(G).members) == {"a"}


def test_commits_carry_the_member_epoch() -> None:
    h = ConsumerHarness(t=1)
    h.join(G, "a")
    topics = (CommitTopic("t", (CommitPartition(0, 7),)),)

    def commit(epoch: int, member: str = "a", version: int = 9) -> ErrorCode:
        reply = h.reply(h.send(OffsetCommit(G, topics, epoch, member, version=version)))
        assert isinstance(reply, OffsetCommitReply)
        return reply.topics[0][1][0][1]

    assert commit(2) is ErrorCode.NONE
    assert commit(1) is ErrorCode.STALE_MEMBER_EPOCH
    assert commit(2, "ghost") is ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(2, version=8) is ErrorCode.UNSUPPORTED_VERSION
    # Generation -1 is an admin's commit: accepted only while the group has no member.
    assert commit(-1, "") is ErrorCode.UNKNOWN_MEMBER_ID
    h.hb(ConsumerGroupHeartbeat(G, "a", -1))
    assert commit(-1, "") is ErrorCode.NONE


def test_fetches_naming_a_member_carry_its_epoch() -> None:
    """OffsetFetch v9 (Kafka's `ConsumerGroup.validateOffsetFetch`): no member named (null,
    -1) is always answered; a named member must be current, with its current epoch; the
    error is the group's, with no partitions."""
    h = ConsumerHarness(t=1)
    h.join(G, "a")
    h.send(OffsetCommit(G, (CommitTopic("t", (CommitPartition(0, 7),)),), 2, "a"))

    def fetch(member: str | None, epoch: int) -> OffsetFetchReply:
        command = OffsetFetch(G, (("t", (0,)),), version=9, member_id=member, member_epoch=epoch)
        reply = h.reply(h.send(command))
        assert isinstance(reply, OffsetFetchReply)
        return reply

    found = (("t", (FetchedOffset(0, 7, -1, ""),)),)
    assert fetch(None, -1) == OffsetFetchReply(ErrorCode.NONE, found)
    assert fetch("a", 2) == OffsetFetchReply(ErrorCode.NONE, found)
    assert fetch("a", 1) == OffsetFetchReply(ErrorCode.STALE_MEMBER_EPOCH)
    assert fetch("a", 3) == OffsetFetchReply(ErrorCode.STALE_MEMBER_EPOCH)
    assert fetch("ghost", 2) == OffsetFetchReply(ErrorCode.UNKNOWN_MEMBER_ID)
    assert fetch(None, 2) == OffsetFetchReply(ErrorCode.UNKNOWN_MEMBER_ID)
    assert fetch("", -1) == OffsetFetchReply(ErrorCode.UNKNOWN_MEMBER_ID)
    # A classic group checks no member (Kafka: only a Dead group refuses), nor does a group
    # nobody has created.
    h.send(OffsetCommit("classic", (CommitTopic("t", (CommitPartition(0, 3),)),)))
    for group in ("classic", "nobody"):
        command = OffsetFetch(group, (("t", (0,)),), version=9, member_id="x", member_epoch=5)
        reply = h.reply(h.send(command))
        assert isinstance(reply, OffsetFetchReply) and reply.error is ErrorCode.NONE


# ========================================================================== configuration
def test_group_consumer_settings_are_accepted_and_checked() -> None:
    config = CoordinatorConfig.from_properties(
        {
            "group.consumer.session.timeout.ms": "50000",
            "group.consumer.heartbeat.interval.ms": "6000",
            "group.consumer.assignors": "range, uniform",
            "group.consumer.migration.policy": "BIDIRECTIONAL",
        }
    )
    assert config.group_consumer_assignors == ("range", "uniform")
    assert config.group_consumer_migration_policy == "bidirectional"
    with pytest.raises(ConfigError, match="must be one of disabled, upgrade, downgrade"):
        CoordinatorConfig.from_properties({"group.consumer.migration.policy": "sideways"})
    with pytest.raises(ConfigError, match=r"session\.timeout\.ms: must be greater than or equal"):
        CoordinatorConfig.from_properties({"group.consumer.session.timeout.ms": "1000"})
    with pytest.raises(ConfigError, match="unknown server assignor 'sticky'"):
        CoordinatorConfig.from_properties({"group.consumer.assignors": "sticky"})


def test_every_event_follows_the_schema() -> None:
    h = ConsumerHarness(t=3)
    clients = [Client(h, G, f"m{i}") for i in range(3)]
    for _ in range(4):
        for c in clients:
            c.heartbeat()
    clients[0].leave()
    h.advance(60_000)
    types = {e.type for e in h.events}
    assert {EventType.GROUP_EPOCH_BUMPED, EventType.MEMBER_RECONCILED} <= types
    for event in h.events:
        line = event.to_json_dict(1)
        assert check_event(line) is None, line


def test_consumer_group_describe_shows_epochs_assignor_and_both_assignments() -> None:
    h = ConsumerHarness(t=2)
    a = Client(h, G, "a")
    a.heartbeat()
    h.join(G, "b", server_assignor="range")
    reply = h.reply(h.send(ConsumerGroupDescribe((G, "nobody"))))
    assert isinstance(reply, ConsumerGroupDescribeReply)
    described, missing = reply.groups
    assert (described.state, described.group_epoch, described.assignment_epoch) == (
        "Reconciling",
        3,
        3,
    )
    assert described.assignor == "range"
    members = {m.member_id: m for m in described.members}
    assert members["a"].assignment == ((T, "t", (0, 1)),)
    assert members["a"].target_assignment == ((T, "t", (0,)),)
    assert members["b"].assignment == () and members["b"].target_assignment == ((T, "t", (1,)),)
    assert (missing.error, missing.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
    )
