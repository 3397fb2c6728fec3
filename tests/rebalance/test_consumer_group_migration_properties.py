"""Properties of a consumer group with classic-protocol members (online migration), under any
interleaving of KIP-848 and classic joins, heartbeats, rejoins, leaves, crashes, topic growth
and coordinator moves, starting from a consumer group or from a running classic group upgraded
by the first KIP-848 member:

* never two owners: no partition is held by two members of the group, and no two live clients
  (of either protocol) believe they own the same partition;
* every member epoch is at most the target epoch, which is at most the group epoch;
* convergence: once nothing changes, a few heartbeats (and, for classic members, the rejoins
  they are asked for) make the group Stable, every member at the group epoch, with every
  partition owned once.

An anchor KIP-848 member never leaves, so the group stays a consumer group (the downgrade has
tests of its own, `test_consumer_group_migration.py`).
"""

from __future__ import annotations

from consumer_harness import Client, ConsumerHarness, assert_one_holder_per_partition, topic_id
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from test_consumer_group_migration import Classic, classic_group

from rebalance.classic.replies import JoinGroupReply
from rebalance.consumer_group.group import MemberState
from rebalance.errors import ErrorCode

G = "g"
T = topic_id("t")
ANCHOR = "anchor"
KIP848 = [f"k{i}" for i in range(3)]
CLASSIC = [f"c{i}" for i in range(3)]


class Tolerant(Classic):
    """A classic client that takes every answer as the Java client does: REBALANCE_IN_PROGRESS
    makes it rejoin; UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION make it lose its partitions and
    join again as a new member. Cooperative clients list "range" after "cooperative-sticky"
    (as one midway through Kafka's two-bounce upgrade does), so every classic member shares a
    protocol with the others."""

    def protocols(self) -> tuple[tuple[str, bytes], ...]:
        metadata = self.metadata()
        if self.cooperative:
            return (("cooperative-sticky", metadata), ("range", metadata))
        return (("range", metadata),)

    #: What it sends next: "beat" (Heartbeat), "join" (JoinGroup) or "sync" (SyncGroup); a
    #: real client syncs right after its join, but other members may act in between.
    next: str = "join"
    #: What it owned when it sent its last JoinGroup (a cooperative client that loses some of
    #: them at the sync rejoins at once).
    before: frozenset[int] = frozenset()

    def lost(self) -> None:
        """onPartitionsLost: UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION; join again as new."""
        self.owned = set()
        self.member_id = ""
        self.generation = -1
        self.next = "join"

    def step(self) -> None:
        if self.next == "join":
            self.before = frozenset(self.owned)
            reply = self.h.reply(self.send_join())  # eager: gives everything up first
            assert isinstance(reply, JoinGroupReply)
            if reply.error is ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = reply.member_id
            elif reply.error is not ErrorCode.NONE:
                self.lost()
            else:
                self.member_id, self.generation = reply.member_id, reply.generation_id
                self.next = "sync"
        elif self.next == "sync":
            synced = self.sync()
            if synced.error is ErrorCode.REBALANCE_IN_PROGRESS:
                self.next = "join"
            elif synced.error is not ErrorCode.NONE:
                self.lost()
            else:
                revoked = self.cooperative and bool(self.before - self.owned)
                self.next = "join" if revoked else "beat"
        else:
            error = self.heartbeat()
            if error is ErrorCode.REBALANCE_IN_PROGRESS:
                self.next = "join"
            elif error is not ErrorCode.NONE:
                self.lost()

    def settle(self) -> None:
        """Steps until it only heartbeats again (a real client's join, sync, rejoin)."""
        self.step()
        for _ in range(6):
            if self.next == "beat":
                return
            self.step()


class MigrationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = ConsumerHarness(t=6)
        self.partitions = 6
        self.modern: dict[str, Client] = {}
        self.classic: dict[str, Tolerant] = {}
        self.crashed: set[str] = set()

    @initialize(upgrade=st.booleans(), cooperative=st.booleans())
    def start(self, upgrade: bool, cooperative: bool) -> None:
        if upgrade:  # a running classic group, upgraded by the anchor's join
            formed = classic_group(self.h, (0, 1, 2), (3, 4, 5))
            for name, member in zip(CLASSIC[:2], formed, strict=True):
                tolerant = Tolerant(self.h, cooperative)
                tolerant.member_id, tolerant.generation = member.member_id, member.generation
                tolerant.owned, tolerant.next = member.owned, "beat"
                self.classic[name] = tolerant
        self.modern[ANCHOR] = Client(self.h, G, ANCHOR)
        self.modern[ANCHOR].heartbeat()

    def live_modern(self) -> list[Client]:
        return [c for n, c in sorted(self.modern.items()) if n not in self.crashed]

    def live_classic(self) -> list[Tolerant]:
        return [c for n, c in sorted(self.classic.items()) if n not in self.crashed]

    @rule(name=st.sampled_from(KIP848))
    def modern_joins(self, name: str) -> None:
        if name in self.modern and name not in self.crashed:
            return
        self.crashed.discard(name)
        self.modern[name] = Client(self.h, G, name)
        self.modern[name].heartbeat()

    @rule(name=st.sampled_from(CLASSIC), cooperative=st.booleans())
    def classic_joins(self, name: str, cooperative: bool) -> None:
        if name in self.classic and name not in self.crashed:
            return
        self.crashed.discard(name)
        self.classic[name] = Tolerant(self.h, cooperative)
        self.classic[name].step()

    @precondition(lambda self: bool(self.live_modern()))
    @rule(data=st.data())
    def modern_heartbeats(self, data: st.DataObject) -> None:
        data.draw(st.sampled_from(self.live_modern())).heartbeat()

    @precondition(lambda self: bool(self.live_classic()))
    @rule(data=st.data())
    def classic_steps(self, data: st.DataObject) -> None:
        data.draw(st.sampled_from(self.live_classic())).step()

    @precondition(lambda self: len(self.live_modern()) > 1)
    @rule(data=st.data())
    def modern_leaves(self, data: st.DataObject) -> None:
        client = data.draw(st.sampled_from(self.live_modern()[1:]))  # never the anchor
        if client.epoch > 0:
            client.leave()
        del self.modern[client.member_id]

    @precondition(lambda self: bool(self.live_classic()))
    @rule(data=st.data())
    def classic_leaves(self, data: st.DataObject) -> None:
        live = [(n, c) for n, c in sorted(self.classic.items()) if n not in self.crashed]
        name, client = data.draw(st.sampled_from(live))
        if client.member_id:
            client.owned = set()
            self.h.leave(G, client.member_id)
        del self.classic[name]

    @precondition(lambda self: len(self.live_modern()) > 1 or bool(self.live_classic()))
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        """A client stops (kill -9): its session will expire."""
        names = [n for n in (*self.modern, *self.classic) if n != ANCHOR and n not in self.crashed]
        if names:
            self.crashed.add(data.draw(st.sampled_from(sorted(names))))

    @rule(ms=st.integers(1_000, 40_000))
    def time_passes(self, ms: int) -> None:
        elapsed = 0
        while elapsed + 3_000 <= ms:
            self.h.advance(3_000)
            elapsed += 3_000
            for client in self.live_modern():
                client.heartbeat()
            for classic in self.live_classic():
                classic.settle()
        self.h.advance(ms - elapsed)

    @rule(extra=st.integers(1, 3))
    def partitions_added(self, extra: int) -> None:
        self.partitions += extra
        self.h.set_topics(t=self.partitions)

    @rule()
    def coordinator_moves(self) -> None:
        # Each new coordinator draws other member ids (the harness reseeds the same way on
        # every failover; real ids are random UUIDs, and a repeat would be two clients in one).
        self.h.seed += 1
        self.h.failover()

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def never_two_owners(self) -> None:
        group = self.h.core.group(G)
        if group is None:
            return
        assert_one_holder_per_partition(group)
        believed: dict[int, str] = {}
        for client in self.live_modern():
            for p in client.owned.get(T, set()):
                assert p not in believed, f"t-{p}: {believed[p]} and {client.member_id}"
                believed[p] = client.member_id
        for classic in self.live_classic():
            for p in classic.owned:
                assert p not in believed, f"t-{p}: {believed[p]} and {classic.member_id}"
                believed[p] = classic.member_id

    @invariant()
    def epochs_are_ordered(self) -> None:
        group = self.h.core.group(G)
        if group is None:
            return
        assert group.target_epoch <= group.group_epoch
        for member in group.members.values():
            assert member.member_epoch <= group.target_epoch

    def teardown(self) -> None:
        for _ in range(15):
            self.h.advance(3_000)
            for client in self.live_modern():
                client.heartbeat()
            for classic in self.live_classic():
                classic.settle()
        for client in self.live_modern():
            if client.fenced:
                client.heartbeat()
        for _ in range(4):
            for client in self.live_modern():
                client.heartbeat()
            for classic in self.live_classic():
                classic.settle()
        group = self.h.group(G)
        assert group.kafka_state == "Stable", group.kafka_state
        live = {c.member_id for c in self.live_modern()} | {
            c.member_id for c in self.live_classic()
        }
        assert set(group.members) == live
        for member in group.members.values():
            assert member.state is MemberState.STABLE
            assert member.member_epoch == group.group_epoch
        owned = [p for c in self.live_modern() for p in c.owned.get(T, set())]
        owned += [p for c in self.live_classic() for p in c.owned]
        assert sorted(owned) == list(range(self.partitions))


MigrationMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMigrationProperties = MigrationMachine.TestCase
