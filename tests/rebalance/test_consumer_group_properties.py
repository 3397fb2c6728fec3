"""Properties of KIP-848 reconciliation under any interleaving of joins, heartbeats, leaves,
crashes, topic growth and coordinator moves:

* never two owners: no partition is held (assigned or being revoked) by two members, and no two
  live clients believe they own the same partition;
* every member epoch is at most the target epoch, which is at most the group epoch;
* convergence: once nothing changes, a few heartbeats from every live member make the group
  Stable, every member at the group epoch, with every subscribed partition assigned once.

The same machine runs with Kafka 4.3's assignment batching (a target at most once a second,
computed by the first heartbeat after it), and with targets computed by a worker that answers
late: the properties do not depend on when targets come.
"""

from __future__ import annotations

from consumer_harness import Client, ConsumerHarness, assert_one_holder_per_partition, topic_id
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rebalance.consumer_group import epochs
from rebalance.consumer_group.group import MemberState

G = "g"
MEMBERS = [f"m{i}" for i in range(5)]


class ReconciliationMachine(RuleBasedStateMachine):
    #: `group.consumer.assignment.interval.ms` in force (0: a target per epoch bump), and so
    #: how long the settling heartbeats wait between rounds.
    batching = False
    settle_ms = 0

    def __init__(self) -> None:
        super().__init__()
        self.h = ConsumerHarness(batching=self.batching, t=6, u=3)
        self.clients: dict[str, Client] = {}
        self.crashed: set[str] = set()
        self.partitions = {"t": 6, "u": 3}

    def live(self) -> list[Client]:
        return [c for m, c in sorted(self.clients.items()) if m not in self.crashed]

    @rule(member=st.sampled_from(MEMBERS), both=st.booleans())
    def join(self, member: str, both: bool) -> None:
        if member in self.clients and member not in self.crashed:
            return
        self.crashed.discard(member)
        topics = ("t", "u") if both else ("t",)
        self.clients[member] = Client(self.h, G, member, topics)
        self.clients[member].heartbeat()

    @precondition(lambda self: bool(self.live()))
    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        data.draw(st.sampled_from(self.live())).heartbeat()

    @precondition(lambda self: bool(self.live()))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        client = data.draw(st.sampled_from(self.live()))
        if client.epoch > 0:
            client.leave()
        del self.clients[client.member_id]

    @precondition(lambda self: bool(self.live()))
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        """A client stops heartbeating (kill -9): its session will expire."""
        self.crashed.add(data.draw(st.sampled_from(self.live())).member_id)

    @rule(ms=st.integers(1_000, 50_000))
    def time_passes(self, ms: int) -> None:
        # live clients heartbeat on their interval (5 s) while time passes
        elapsed = 0
        while elapsed + 5_000 <= ms:
            self.h.advance(5_000)
            elapsed += 5_000
            for client in self.live():
                client.heartbeat()
        self.h.advance(ms - elapsed)

    @rule(topic=st.sampled_from(["t", "u"]), extra=st.integers(1, 3))
    def partitions_added(self, topic: str, extra: int) -> None:
        self.partitions[topic] += extra
        self.h.set_topics(**self.partitions)

    @rule()
    def coordinator_moves(self) -> None:
        self.h.failover()

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def never_two_owners(self) -> None:
        group = self.h.core.group(G)
        if group is None:
            return
        assert_one_holder_per_partition(group)
        believed: dict[tuple[str, int], str] = {}
        for client in self.live():
            for t, ps in client.owned.items():
                for p in ps:
                    assert (t, p) not in believed, f"{t}-{p} consumed twice"
                    believed[(t, p)] = client.member_id

    @invariant()
    def epochs_are_ordered(self) -> None:
        group = self.h.core.group(G)
        if group is None:
            return
        assert group.target_epoch <= group.group_epoch
        for member in group.members.values():
            assert member.member_epoch <= group.target_epoch

    def teardown(self) -> None:
        # Convergence: crashed members expire, live ones heartbeat until nothing moves.
        for _ in range(12):
            self.h.advance(5_000)
            for client in self.live():
                client.heartbeat()
        group = self.h.core.group(G)
        if group is None or not self.live():
            return
        for client in self.live():
            if client.fenced:  # it rejoins as a real client would
                client.heartbeat()
        for _ in range(6):
            self.h.advance(self.settle_ms)
            for client in self.live():
                client.heartbeat()
        assert group.kafka_state == "Stable", group.kafka_state
        assert set(group.members) == {c.member_id for c in self.live()}
        for member in group.members.values():
            assert member.state is MemberState.STABLE
            assert member.member_epoch == group.group_epoch
        owned = [(t, p) for c in self.live() for t, ps in c.owned.items() for p in ps]
        subscribed = {t for c in self.live() for t in c.topics}
        expected = {(topic_id(t), p) for t in subscribed for p in range(self.partitions[t])}
        assert sorted(owned) == sorted(expected)


ReconciliationMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestReconciliationProperties = ReconciliationMachine.TestCase


class BatchedReconciliationMachine(ReconciliationMachine):
    batching = True
    settle_ms = 1_000


BatchedReconciliationMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestBatchedReconciliationProperties = BatchedReconciliationMachine.TestCase


class OffloadedReconciliationMachine(ReconciliationMachine):
    """Every target (after a group's first) computed by a worker that answers whenever the
    `worker_delivers` rule says: any number of heartbeats, joins and leaves in between."""

    batching = True
    settle_ms = 1_000

    def __init__(self) -> None:
        self.offload_from = epochs.OFFLOAD_FROM
        epochs.OFFLOAD_FROM = 0
        super().__init__()
        self.h.hold_offloaded = True

    @rule()
    def worker_delivers(self) -> None:
        self.h.deliver_offloaded()

    def teardown(self) -> None:
        try:
            self.h.hold_offloaded = False
            self.h.deliver_offloaded()
            super().teardown()
        finally:
            epochs.OFFLOAD_FROM = self.offload_from


OffloadedReconciliationMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestOffloadedReconciliationProperties = OffloadedReconciliationMachine.TestCase
