"""Kafka's pending-sync rule (spec §1.4 pending-sync timer, §1.5 pending-sync expiry, §9 rule 9).

When a join phase completes, every member of the new generation is pending sync and a timer of
the rebalance timeout R is armed. A member that sends no SyncGroup within R is removed (no
answer) and the group rebalances; members that did sync, the leader included, stay and learn of
the rebalance from their next heartbeat (REBALANCE_IN_PROGRESS). The cases follow Kafka's own
tests of the rule (GroupMetadataManagerTest / GroupCoordinatorTest
`testRebalanceTimesOutWhenSyncRequestIsNotReceived*`, `...DoesNotTimeOutWhenAllSyncAreReceived`):
three members, R = 5 s, heartbeats at R/2 to show they do not interfere.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.classic.records import GroupMetadataRecord
from rebalance.classic.timers import sync_key
from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness

G = "group-id"
R = 5000
SESSION = 6000  # the harness's group.min.session.timeout.ms is 6 s (Kafka's default)


@dataclass
class Generation:
    leader: str
    followers: list[str]
    generation: int

    @property
    def members(self) -> list[str]:
        return [self.leader, *self.followers]


def join_three(h: GroupHarness, instance_ids: tuple[str | None, ...] = (None,) * 3) -> Generation:
    """Three members join; the generation forms; nobody has synced yet. Returns at the moment
    the join phase completed (the pending-sync timer is armed for R from now)."""
    tokens = []
    for instance_id in instance_ids:
        if instance_id is None:
            tokens.append(h.new_member(G, rebalance_timeout_ms=R, session_timeout_ms=SESSION)[1])
        else:
            kwargs = {"rebalance_timeout_ms": R, "session_timeout_ms": SESSION}
            tokens.append(h.join(G, instance_id=instance_id, **kwargs))  # type: ignore[arg-type]
    h.run_until(lambda: all(h.reply(t) is not None for t in tokens))
    replies = [h.join_reply(t) for t in tokens]
    leader = replies[0].leader
    assert h.timer.deadline(sync_key(G)) == h.clock.now_ms() + R
    followers = [r.member_id for r in replies if r.member_id != leader]
    return Generation(leader, followers, replies[0].generation_id)


def heartbeats(h: GroupHarness, gen: Generation, *members: str) -> list[ErrorCode]:
    group = h.core.group(G)
    assert group is not None
    instance = {m.member_id: m.group_instance_id for m in group.members.values()}
    return [h.heartbeat(G, m, gen.generation, instance.get(m)) for m in members]


def test_followers_that_never_sync_are_removed_and_the_leader_stays() -> None:
    h = GroupHarness()
    gen = join_three(h)
    h.advance(R // 2)
    assert heartbeats(h, gen, *gen.members) == [ErrorCode.NONE] * 3
    leader_sync = h.sync(G, gen.leader, gen.generation, {m: b"a" for m in gen.members})
    assert h.sync_reply(leader_sync).error is ErrorCode.NONE
    group = h.core.group(G)
    assert group is not None and group.kafka_state == "Stable"
    assert heartbeats(h, gen, gen.leader) == [ErrorCode.NONE]
    records_before = len(h.records)
    h.advance(R // 2 - 1)
    assert set(group.members) == set(gen.members)
    h.advance(1)  # R after the join completed
    assert len(h.records) == records_before  # Kafka: the expiry writes nothing
    assert set(group.members) == {gen.leader}
    assert group.kafka_state == "PreparingRebalance"
    assert heartbeats(h, gen, gen.leader) == [ErrorCode.REBALANCE_IN_PROGRESS]
    assert heartbeats(h, gen, *gen.followers) == [ErrorCode.UNKNOWN_MEMBER_ID] * 2
    # The leader rejoins alone: the next generation forms at once.
    rejoin = h.join_reply(h.join(G, gen.leader, rebalance_timeout_ms=R, session_timeout_ms=SESSION))
    assert (rejoin.error, rejoin.generation_id) == (ErrorCode.NONE, gen.generation + 1)
    assert rejoin.leader == gen.leader


def test_a_leader_that_never_syncs_is_removed_and_the_followers_stay() -> None:
    h = GroupHarness()
    gen = join_three(h)
    h.advance(R // 2)
    assert heartbeats(h, gen, *gen.members) == [ErrorCode.NONE] * 3
    parked = [h.sync(G, f, gen.generation) for f in gen.followers]
    assert [h.reply(t) for t in parked] == [None, None]
    h.advance(R // 2)
    assert [h.sync_reply(t).error for t in parked] == [ErrorCode.REBALANCE_IN_PROGRESS] * 2
    group = h.core.group(G)
    assert group is not None
    assert set(group.members) == set(gen.followers)
    assert group.leader_id in gen.followers  # a new leader among those left
    assert group.kafka_state == "PreparingRebalance"
    assert heartbeats(h, gen, gen.leader) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert heartbeats(h, gen, *gen.followers) == [ErrorCode.REBALANCE_IN_PROGRESS] * 2


def test_when_nobody_syncs_everyone_is_removed_and_the_group_is_empty() -> None:
    h = GroupHarness()
    gen = join_three(h)
    h.advance(R // 2)
    assert heartbeats(h, gen, *gen.members) == [ErrorCode.NONE] * 3
    records_before = len(h.records)
    h.advance(R // 2)
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Empty" and not group.members
    assert group.generation == gen.generation + 1  # the join completes into Empty (§9 rule 7)
    # Kafka: the expiry writes one record, the empty group's metadata.
    written = h.records[records_before:]
    assert len(written) == 1 and isinstance(written[0], GroupMetadataRecord)
    assert written[0].value is not None and written[0].value.members == ()
    assert heartbeats(h, gen, *gen.members) == [ErrorCode.UNKNOWN_MEMBER_ID] * 3


def test_when_everyone_syncs_the_expiry_changes_nothing() -> None:
    h = GroupHarness()
    gen = join_three(h)
    h.advance(R // 2)
    assert heartbeats(h, gen, *gen.members) == [ErrorCode.NONE] * 3
    syncs = [h.sync(G, gen.leader, gen.generation, {m: b"a" for m in gen.members})]
    syncs += [h.sync(G, f, gen.generation) for f in gen.followers]
    assert [h.sync_reply(t).error for t in syncs] == [ErrorCode.NONE] * 3
    assert h.timer.deadline(sync_key(G)) is None  # Kafka cancels it once all have synced
    for _ in range(2):
        h.advance(R // 2)
        assert heartbeats(h, gen, *gen.members) == [ErrorCode.NONE] * 3
    group = h.core.group(G)
    assert group is not None
    assert group.kafka_state == "Stable" and group.generation == gen.generation
    assert set(group.members) == set(gen.members)


def test_a_follower_that_syncs_after_the_group_is_stable_is_kept() -> None:
    """A late SyncGroup in Stable still counts: it is answered with the assignment and takes
    the member off the pending list."""
    h = GroupHarness()
    gen = join_three(h)
    h.sync(G, gen.leader, gen.generation, {m: m.encode() for m in gen.members})
    late, _silent = gen.followers
    h.advance(R - 1)
    reply = h.sync_reply(h.sync(G, late, gen.generation))
    assert (reply.error, reply.assignment) == (ErrorCode.NONE, late.encode())
    h.advance(1)
    group = h.core.group(G)
    assert group is not None
    assert set(group.members) == {gen.leader, late}
    assert heartbeats(h, gen, gen.leader, late) == [ErrorCode.REBALANCE_IN_PROGRESS] * 2


def test_static_members_that_never_sync_are_removed_too() -> None:
    """Unlike the rebalance timeout (which keeps static non-rejoiners, §9 rule 6), the
    pending-sync expiry removes static members like any other (Kafka's `group.remove`): their
    instance ids are free, and a restart joins as a new member without FENCED_INSTANCE_ID."""
    h = GroupHarness()
    gen = join_three(h, instance_ids=("a", "b", "c"))
    group = h.core.group(G)
    assert group is not None
    instance = {m.member_id: m.group_instance_id for m in group.members.values()}
    h.advance(R // 2)
    assert heartbeats(h, gen, *gen.members) == [ErrorCode.NONE] * 3
    h.sync(G, gen.leader, gen.generation, {}, instance_id=instance[gen.leader])
    h.advance(R // 2)
    assert set(group.members) == {gen.leader}
    gone = [instance[f] for f in gen.followers]
    assert all(i not in group.static_members for i in gone)
    assert heartbeats(h, gen, gen.leader) == [ErrorCode.REBALANCE_IN_PROGRESS]
    restart = h.join(G, instance_id=gone[0], rebalance_timeout_ms=R, session_timeout_ms=SESSION)
    h.join(G, gen.leader, instance_id=instance[gen.leader], rebalance_timeout_ms=R,
           session_timeout_ms=SESSION)  # fmt: skip
    reply = h.join_reply(restart)
    assert reply.error is ErrorCode.NONE and reply.generation_id == gen.generation + 1
    assert reply.member_id not in gen.members
