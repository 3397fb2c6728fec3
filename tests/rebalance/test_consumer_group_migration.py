"""Online migration between classic and consumer groups (`group.consumer.migration.policy`,
Kafka 4.0's `GroupMetadataManager` upgrade/downgrade rules; `consumer_group/migration.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from consumer_harness import Client, ConsumerHarness, topic_id

from assignors.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, LeavingMember, SyncGroup
from rebalance.classic.group import Group
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    LeftMember,
    SyncGroupReply,
)
from rebalance.commands import CommitPartition, CommitTopic, OffsetCommit
from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.commands import ConsumerGroupDescribe
from rebalance.consumer_group.group import ConsumerGroup, MemberState
from rebalance.consumer_group.replies import ConsumerGroupDescribeReply
from rebalance.consumer_group.timers import CONSUMER_CLASSIC_JOIN, CONSUMER_CLASSIC_SYNC
from rebalance.errors import ErrorCode
from rebalance.event_schema import check_event
from rebalance.lifecycle import GroupState
from rebalance.replies import OffsetCommitReply

G = "g"
T = topic_id("t")


def policy(name: str, **more: str) -> CoordinatorConfig:
    return CoordinatorConfig.from_properties({"group.consumer.migration.policy": name, **more})


@dataclass
class Classic:
    """A classic consumer as the Java client behaves: `cooperative` members list what they own
    in their subscription (ConsumerProtocol v1+) and give up only what the new assignment drops;
    eager ones (v0) give up everything before they rejoin."""

    h: ConsumerHarness
    cooperative: bool = True
    member_id: str = ""
    generation: int = -1
    owned: set[int] = field(default_factory=set)
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 30_000
    topics: tuple[str, ...] = ("t",)

    def metadata(self) -> bytes:
        if not self.cooperative:
            return encode_subscription(Subscription(self.topics), 0)
        owned = tuple(("t", p) for p in sorted(self.owned))
        return encode_subscription(Subscription(self.topics, owned_partitions=owned), 1)

    def protocols(self) -> tuple[tuple[str, bytes], ...]:
        protocol = "cooperative-sticky" if self.cooperative else "range"
        return ((protocol, self.metadata()),)

    def send_join(self) -> int:
        if not self.cooperative:
            self.owned = set()  # eager: revoke everything, then rejoin
        return self.h.send(
            JoinGroup(
                G,
                self.member_id,
                "consumer",
                self.protocols(),
                self.session_timeout_ms,
                self.rebalance_timeout_ms,
                version=9,
            )
        )

    def join(self) -> JoinGroupReply:
        reply = self.h.reply(self.send_join())
        assert isinstance(reply, JoinGroupReply)
        if reply.error is ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = reply.member_id
            return self.join()
        assert reply.error is ErrorCode.NONE, reply
        self.member_id, self.generation = reply.member_id, reply.generation_id
        return reply

    def sync(self) -> SyncGroupReply:
        protocol = "cooperative-sticky" if self.cooperative else "range"
        command = SyncGroup(G, self.generation, self.member_id, (), None, "consumer", protocol)
        reply = self.h.reply(self.h.send(command))
        assert isinstance(reply, SyncGroupReply)
        if reply.error is ErrorCode.NONE:
            self.owned = {p for t, p in decode_assignment(reply.assignment).partitions if t == "t"}
        return reply

    def heartbeat(self) -> ErrorCode:
        reply = self.h.reply(self.h.send(Heartbeat(G, self.generation, self.member_id)))
        assert isinstance(reply, HeartbeatReply)
        return reply.error

    def rebalance(self) -> None:
        """What the Java client does on REBALANCE_IN_PROGRESS: rejoin and sync; a cooperative
        member that had partitions revoked rejoins once more at once."""
        for _ in range(3):
            before = set(self.owned)
            self.join()
            assert self.sync().error is ErrorCode.NONE
            if not (self.cooperative and before - self.owned):
                return


def classic_group(h: ConsumerHarness, *assignments: tuple[int, ...]) -> list[Classic]:
    """A Stable classic group whose leader hands out `assignments` (one member each)."""
    members = [Classic(h) for _ in assignments]
    tokens = []
    for m in members:
        first = h.reply(m.send_join())
        assert isinstance(first, JoinGroupReply)
        m.member_id = first.member_id
        tokens.append(m.send_join())
    h.run_until(lambda: all(t in h.replies for t in tokens))
    replies = [h.reply(t) for t in tokens]
    assert all(isinstance(r, JoinGroupReply) and r.error is ErrorCode.NONE for r in replies)
    leader = next(r.leader for r in replies if isinstance(r, JoinGroupReply))
    plan = {
        m.member_id: encode_assignment(Assignment(tuple(("t", p) for p in ps)))
        for m, ps in zip(members, assignments, strict=True)
    }
    for m, r in zip(members, replies, strict=True):
        assert isinstance(r, JoinGroupReply)
        m.generation = r.generation_id
    for m in sorted(members, key=lambda m: m.member_id != leader):
        handed = tuple(plan.items()) if m.member_id == leader else ()
        command = SyncGroup(
            G, m.generation, m.member_id, handed, None, "consumer", "cooperative-sticky"
        )
        reply = h.reply(h.send(command))
        assert isinstance(reply, SyncGroupReply) and reply.error is ErrorCode.NONE
        m.owned = {p for _, p in decode_assignment(reply.assignment).partitions}
    return members


def owners(h: ConsumerHarness) -> dict[int, str]:
    group = h.group(G)
    return {p: owner for (t, p), owner in group.partition_owners.items() if t == T}


def snapshot(group: ConsumerGroup) -> object:
    return (
        group.group_epoch,
        group.target_epoch,
        {
            m.member_id: (m.member_epoch, m.state, m.assigned, m.classic, m.instance_id)
            for m in group.members.values()
        },
        dict(group.target.frozen),
        dict(group.offsets),
    )


# -- upgrade ----------------------------------------------------------------------------------
def test_a_consumer_heartbeat_upgrades_a_classic_group_keeping_every_members_partitions() -> None:
    """Kafka's `convertToConsumerGroup`: each classic member becomes a classic-protocol member
    at the classic generation, owning what its ConsumerProtocol assignment gave it; the joining
    KIP-848 member bumps the group epoch; partitions move only once released."""
    h = ConsumerHarness(t=4)
    a, b = classic_group(h, (0, 1), (2, 3))
    h.commit(G, {("t", 0): 5}, member_id=a.member_id, generation=a.generation)
    generation = a.generation
    c = Client(h, G, "c")
    assert c.heartbeat().error is ErrorCode.NONE
    group = h.group(G)
    assert group.offsets[("t", 0)].offset == 5
    assert group.group_epoch == generation + 1 and group.target_epoch == generation + 1
    for m, partitions in ((a, {0, 1}), (b, {2, 3})):
        member = group.members[m.member_id]
        assert member.classic is not None and member.member_epoch == generation
        assert member.assigned == {T: partitions}
    assert owners(h) == {0: a.member_id, 1: a.member_id, 2: b.member_id, 3: b.member_id}
    assert c.owned == {}  # nothing is free yet: c waits for what the target gives it
    # The classic members learn of the new epoch from their heartbeats, and rejoin.
    assert a.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    assert b.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    for m in (a, b):
        m.rebalance()
        assert m.heartbeat() is ErrorCode.NONE
    c.heartbeat()
    held = [a.owned, b.owned, c.owned.get(T, set())]
    assert sorted(p for ps in held for p in ps) == [0, 1, 2, 3]  # each partition, once
    assert all(len(ps) >= 1 for ps in held)
    assert h.group(G).kafka_state == "Stable"
    described = h.reply(h.send(ConsumerGroupDescribe((G,))))
    assert isinstance(described, ConsumerGroupDescribeReply)
    kinds = {m.member_id: m.classic for m in described.groups[0].members}
    assert kinds == {a.member_id: True, b.member_id: True, "c": False}
    before = snapshot(h.group(G))
    h.failover()
    assert snapshot(h.group(G)) == before


def test_the_upgrade_answers_the_classic_groups_parked_requests_with_rebalance_in_progress() -> (
    None
):
    h = ConsumerHarness(t=4)
    a, _ = classic_group(h, (0, 1), (2, 3))
    parked = a.send_join()  # a rejoins: the classic group rebalances, a's join waits for b
    assert h.reply(parked) is None
    Client(h, G, "c").heartbeat()
    assert h.reply(parked) == JoinGroupReply(ErrorCode.REBALANCE_IN_PROGRESS, member_id=a.member_id)
    assert isinstance(h.core.group(G), ConsumerGroup)
    assert not [k for k in h.core.armed_timers() if k[0] in ("join", "sync", "session")]


@pytest.mark.parametrize("name", ["disabled", "downgrade"])
def test_without_upgrade_in_the_policy_a_classic_group_with_members_is_not_found(
    name: str,
) -> None:
    h = ConsumerHarness(policy(name), t=4)
    classic_group(h, (0, 1), (2, 3))
    assert h.join(G, "c").error is ErrorCode.GROUP_ID_NOT_FOUND
    assert isinstance(h.core.group(G), Group)


def test_the_upgrade_needs_the_consumer_protocol_type_and_room_for_the_members() -> None:
    h = ConsumerHarness(policy("upgrade", **{"group.consumer.max.size": "2"}), t=4)
    classic_group(h, (0, 1), (2, 3))
    # Two members fit a consumer group of two, but the joining one does not: Kafka refuses it
    # and the conversion with it.
    assert h.join(G, "c").error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert isinstance(h.core.group(G), Group)
    small = ConsumerHarness(policy("upgrade", **{"group.consumer.max.size": "1"}), t=4)
    classic_group(small, (0, 1), (2, 3))
    assert small.join(G, "c").error is ErrorCode.GROUP_ID_NOT_FOUND
    other = ConsumerHarness(t=4)
    token = other.send(JoinGroup(G, "", "connect", (("v1", b"x"),), 10000, 30000, version=3))
    other.advance(other.config.group_initial_rebalance_delay_ms)
    assert isinstance(other.reply(token), JoinGroupReply)
    assert other.join(G, "c").error is ErrorCode.GROUP_ID_NOT_FOUND


# -- classic members of a consumer group ------------------------------------------------------
def test_a_classic_member_joins_a_consumer_group_and_gets_partitions_once_released() -> None:
    """Kafka's `classicGroupJoinToConsumerGroup`: the JoinGroup is answered at once with the
    member's epoch as generation and no leader; SyncGroup hands out its current assignment;
    its heartbeat says REBALANCE_IN_PROGRESS once what it waits for is free."""
    h = ConsumerHarness(t=4)
    a = Client(h, G, "a")
    a.heartbeat()
    b = Classic(h)
    joined = b.join()
    assert joined.leader == "" and joined.members == ()
    assert h.group(G).group_epoch == 3 and b.generation == 3  # the target epoch
    member = h.group(G).members[b.member_id]
    assert member.state is MemberState.UNRELEASED_PARTITIONS
    assert b.sync().error is ErrorCode.NONE and b.owned == set()
    assert b.heartbeat() is ErrorCode.NONE  # still waiting: a has not released anything
    a.heartbeat()  # a revokes two of its four
    a.heartbeat()
    assert len(a.owned[T]) == 2
    assert b.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    b.rebalance()
    assert b.owned | a.owned[T] == {0, 1, 2, 3} and not b.owned & a.owned[T]
    assert h.group(G).kafka_state == "Stable"
    # It commits as a classic member: its generation is its member epoch, any version.
    topics = (CommitTopic("t", (CommitPartition(min(b.owned), 9),)),)
    for generation, error in ((b.generation, ErrorCode.NONE), (1, ErrorCode.ILLEGAL_GENERATION)):
        reply = h.reply(h.send(OffsetCommit(G, topics, generation, b.member_id, version=7)))
        assert isinstance(reply, OffsetCommitReply) and reply.topics[0][1][0][1] is error
    before = snapshot(h.group(G))
    h.failover()
    assert snapshot(h.group(G)) == before


def test_a_classic_join_to_a_consumer_group_is_checked_first() -> None:
    """Kafka's checks, in order: group full, protocol type "consumer" with a protocol every
    classic member supports, KIP-394's member id round trip; the group is untouched."""
    h = ConsumerHarness(t=4)
    h.join(G, "a")
    Classic(h).join()
    epoch = h.group(G).group_epoch
    meta = encode_subscription(Subscription(("t",)), 1)

    def join(protocols: tuple[tuple[str, bytes], ...], ptype: str = "consumer") -> object:
        return h.reply(h.send(JoinGroup(G, "", ptype, protocols, 10000, 10000, version=5)))

    assert join((("range", meta),)) == JoinGroupReply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    assert join((("x", meta),), "connect") == JoinGroupReply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    required = join((("range", meta), ("cooperative-sticky", meta)))
    assert isinstance(required, JoinGroupReply)
    assert required.error is ErrorCode.MEMBER_ID_REQUIRED and required.member_id
    full = ConsumerHarness(policy("bidirectional", **{"group.consumer.max.size": "1"}), t=1)
    full.join(G, "a")
    token = full.send(JoinGroup(G, "", "consumer", (("range", meta),), 10000, 10000))
    assert full.reply(token) == JoinGroupReply(ErrorCode.GROUP_MAX_SIZE_REACHED)
    assert len(h.group(G).members) == 2 and h.group(G).group_epoch == epoch


def test_classic_sync_and_heartbeat_check_the_member_and_its_generation() -> None:
    h = ConsumerHarness(t=4)
    h.join(G, "a")
    b = Classic(h)
    b.join()
    generation, member = b.generation, b.member_id

    def sync(gen: int, who: str, name: str | None = "cooperative-sticky") -> ErrorCode:
        reply = h.reply(h.send(SyncGroup(G, gen, who, (), None, "consumer", name)))
        assert isinstance(reply, SyncGroupReply)
        return reply.error

    def beat(gen: int, who: str) -> ErrorCode:
        reply = h.reply(h.send(Heartbeat(G, gen, who)))
        assert isinstance(reply, HeartbeatReply)
        return reply.error

    assert sync(generation + 1, member) is ErrorCode.ILLEGAL_GENERATION
    assert sync(generation, member, "range") is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert sync(generation, "a") is ErrorCode.UNKNOWN_MEMBER_ID  # a uses the consumer protocol
    assert beat(generation - 1, member) is ErrorCode.ILLEGAL_GENERATION
    assert beat(1, "ghost") is ErrorCode.UNKNOWN_MEMBER_ID
    assert sync(generation, member) is ErrorCode.NONE
    # A new epoch (c joins): its sync is refused until it rejoins.
    h.join(G, "c")
    assert sync(generation, member) is ErrorCode.REBALANCE_IN_PROGRESS


def test_a_classic_member_that_does_not_rejoin_or_sync_is_fenced() -> None:
    h = ConsumerHarness(t=4)
    h.join(G, "a")
    b = Classic(h, rebalance_timeout_ms=20_000, session_timeout_ms=45_000)
    b.join()  # joined, never syncs: its sync timeout is its rebalance timeout
    assert b.member_id in h.group(G).members
    fired = h.advance(20_000)
    assert (CONSUMER_CLASSIC_SYNC, G, b.member_id) in fired
    assert b.member_id not in h.group(G).members
    c = Classic(h, rebalance_timeout_ms=20_000, session_timeout_ms=45_000)
    c.rebalance()
    h.join(G, "d")  # a new epoch: c is told to rejoin, and does not
    assert c.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(10_000)
    assert c.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS  # the first answer armed the timer
    fired = h.advance(10_000)
    assert (CONSUMER_CLASSIC_JOIN, G, c.member_id) in fired
    assert c.member_id not in h.group(G).members


def test_a_classic_members_session_is_its_own_session_timeout() -> None:
    h = ConsumerHarness(t=4)
    h.join(G, "a")
    b = Classic(h, session_timeout_ms=6_000)
    b.rebalance()
    h.advance(5_000)
    assert b.heartbeat() is ErrorCode.NONE
    h.advance(5_999)
    assert b.member_id in h.group(G).members
    h.advance(1)
    assert b.member_id not in h.group(G).members
    # After a coordinator move too: sessions run from the load, each classic member's its own.
    c = Classic(h, session_timeout_ms=6_000)
    c.rebalance()
    h.failover()
    h.advance(5_999)
    assert c.member_id in h.group(G).members
    h.advance(1)
    assert c.member_id not in h.group(G).members


def test_leave_group_removes_a_classic_member_by_member_id() -> None:
    h = ConsumerHarness(t=4)
    h.join(G, "a")
    b = Classic(h)
    b.rebalance()
    epoch = h.group(G).group_epoch
    reply = h.reply(h.send(LeaveGroup(G, (LeavingMember(b.member_id), LeavingMember("a")))))
    assert reply == LeaveGroupReply(
        ErrorCode.NONE,
        (
            LeftMember(b.member_id, None, ErrorCode.NONE),
            LeftMember("a", None, ErrorCode.UNKNOWN_MEMBER_ID),  # not a classic member
        ),
    )
    assert set(h.group(G).members) == {"a"} and h.group(G).group_epoch == epoch + 1


# -- downgrade ----------------------------------------------------------------------------------
def test_the_last_consumer_member_leaving_downgrades_the_group_to_classic() -> None:
    """Kafka's `convertToClassicGroup`: the classic members stay, with their target
    assignment, at generation = the group epoch, and a rebalance starts at once."""
    h = ConsumerHarness(t=4)
    a, b = classic_group(h, (0, 1), (2, 3))
    c = Client(h, G, "c")
    c.heartbeat()
    for m in (a, b):
        assert m.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
        m.rebalance()
    c.heartbeat()
    epoch = h.group(G).group_epoch
    h.commit(G, {("t", 1): 3}, member_id=a.member_id, generation=a.generation)
    c.leave()
    group = h.core.group(G)
    assert isinstance(group, Group)
    assert group.generation == epoch and group.state is GroupState.JOINING
    assert set(group.members) == {a.member_id, b.member_id}
    assert group.offsets[("t", 1)].offset == 3
    # The classic members rejoin a classic group: a leader is elected and assigns.
    assert a.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    ta, tb = a.send_join(), b.send_join()
    ra, rb = h.reply(ta), h.reply(tb)
    assert isinstance(ra, JoinGroupReply) and isinstance(rb, JoinGroupReply)
    assert ra.generation_id == epoch + 1 and ra.leader in (a.member_id, b.member_id)
    h.failover()
    assert isinstance(h.core.group(G), Group)
    assert set(h.core.group(G).members) == {a.member_id, b.member_id}
    # Every event of the upgrade, the classic members' life in the consumer group and the
    # downgrade follows the event log's schema.
    for event in h.events:
        line = event.to_json_dict(1)
        assert check_event(line) is None, line


def test_the_last_consumer_members_session_expiring_downgrades_the_group_too() -> None:
    h = ConsumerHarness(t=4)
    Client(h, G, "c").heartbeat()
    b = Classic(h, session_timeout_ms=60_000)
    b.rebalance()
    h.advance(h.config.group_consumer_session_timeout_ms - 1)
    assert b.heartbeat() is ErrorCode.NONE
    assert isinstance(h.core.group(G), ConsumerGroup)
    h.advance(1)  # c's session expires
    group = h.core.group(G)
    assert isinstance(group, Group) and group.state is GroupState.JOINING
    assert set(group.members) == {b.member_id}
    assert b.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize("name", ["disabled", "upgrade"])
def test_without_downgrade_in_the_policy_the_group_stays_a_consumer_group(name: str) -> None:
    h = ConsumerHarness(policy(name), t=4)
    c = Client(h, G, "c")
    c.heartbeat()
    b = Classic(h)
    b.rebalance()
    c.leave()
    group = h.group(G)
    assert set(group.members) == {b.member_id}
    assert b.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    b.rebalance()
    assert b.owned == {0, 1, 2, 3}


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_at_once() -> None:
    """Kafka's `validateOnlineDowngradeWithReplacedMemberId`: the last KIP-848 member is a
    static member, and its instance id rejoins by classic JoinGroup (a consumer rolled back to
    the classic protocol): the group is classic again, the new member in the old one's place
    with its partitions, and no rebalance starts."""
    h = ConsumerHarness(t=4)
    first = h.join(G, "a", instance_id="i1")
    a = Client(h, G, "a", epoch=first.member_epoch, owned={T: {0, 1, 2, 3}})
    b = Classic(h)
    b.join()  # the target moves two of a's partitions to b
    a.heartbeat()  # a revokes them
    a.heartbeat()
    b.rebalance()
    kept = a.owned[T]
    epoch = h.group(G).group_epoch
    assert h.group(G).kafka_state == "Stable" and len(kept) == 2
    meta = encode_subscription(Subscription(("t",)), 0)
    protocols = (("cooperative-sticky", meta),)
    token = h.send(JoinGroup(G, "", "consumer", protocols, 10_000, 30_000, "i1"))
    joined = h.reply(token)
    assert isinstance(joined, JoinGroupReply) and joined.error is ErrorCode.NONE
    group = h.core.group(G)
    assert isinstance(group, Group) and group.state is GroupState.STABLE
    assert group.generation == epoch == joined.generation_id
    assert set(group.members) == {b.member_id, joined.member_id}
    assert group.static_members == {"i1": joined.member_id}
    sync = SyncGroup(G, epoch, joined.member_id, (), "i1", "consumer", "cooperative-sticky")
    synced = h.reply(h.send(sync))
    assert isinstance(synced, SyncGroupReply) and synced.error is ErrorCode.NONE
    assert {p for _, p in decode_assignment(synced.assignment).partitions} == kept
    assert b.heartbeat() is ErrorCode.NONE  # nobody rebalances
    h.failover()
    assert set(h.core.group(G).members) == {b.member_id, joined.member_id}


def test_an_upgrade_that_cannot_read_the_members_protocol_changes_nothing() -> None:
    """Kafka's answers when the classic members' ConsumerProtocol bytes cannot be converted:
    unreadable metadata is GROUP_ID_NOT_FOUND, an assignment carrying a custom assignor's user
    data (which the consumer group would lose) UNSUPPORTED_VERSION; the group stays classic."""
    h = ConsumerHarness(t=4)
    token = h.send(JoinGroup(G, "", "consumer", (("range", b"not a subscription"),), 10_000,
                             30_000, version=3))  # fmt: skip
    h.advance(h.config.group_initial_rebalance_delay_ms)
    joined = h.reply(token)
    assert isinstance(joined, JoinGroupReply) and joined.error is ErrorCode.NONE
    assert h.join(G, "c").error is ErrorCode.GROUP_ID_NOT_FOUND
    assert isinstance(h.core.group(G), Group)
    other = ConsumerHarness(t=4)
    member = Classic(other)
    first = other.reply(member.send_join())
    assert isinstance(first, JoinGroupReply)
    member.member_id = first.member_id
    token = member.send_join()
    other.advance(other.config.group_initial_rebalance_delay_ms)
    joined = other.reply(token)
    assert isinstance(joined, JoinGroupReply) and joined.error is ErrorCode.NONE
    with_user_data = encode_assignment(Assignment((("t", 0),), user_data=b"custom"))
    plan = ((member.member_id, with_user_data),)
    protocol = ("consumer", "cooperative-sticky")
    sync = SyncGroup(G, joined.generation_id, member.member_id, plan, None, *protocol)
    assert isinstance(other.reply(other.send(sync)), SyncGroupReply)
    assert other.join(G, "c").error is ErrorCode.UNSUPPORTED_VERSION
    assert isinstance(other.core.group(G), Group)
