"""Random joins, syncs, heartbeats, leaves, commits and clock advances (hypothesis stateful),
with the core's invariants checked after every step:

* at most one leader per generation: every successful JoinGroup reply of a generation names the
  same leader, and a group's leader is one of its members;
* a group's generation never decreases;
* every parked request is eventually answered or its member removed: at every step each
  unanswered JoinGroup/SyncGroup is held by a live member, and after a long quiet period every
  request has an answer;
* commits with a stale generation never change an offset;
* every event the core emits conforms to the event log's schema (`rebalance.event_schema`);
* replaying the emitted records into a fresh core gives equal durable state: every Stable or
  Empty group comes back with the same generation, protocol, leader, members and assignments,
  and every group's offsets are equal.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rebalance.classic.commands import LeavingMember, SyncGroup
from rebalance.classic.group import Group
from rebalance.classic.replies import JoinGroupReply
from rebalance.config import CoordinatorConfig
from rebalance.core import GroupCoordinatorCore
from rebalance.errors import ErrorCode
from rebalance.event_schema import check_event
from rebalance.lifecycle import GroupState
from rebalance.rng import SplitMix64
from rebalance.testing import GroupHarness

GROUPS = ("alpha", "beta")
TOPIC = "orders"
CONFIG = CoordinatorConfig.from_properties(
    {
        "group.initial.rebalance.delay.ms": "100",
        "group.min.session.timeout.ms": "10",
        "offsets.topic.num.partitions": "4",
        "group.max.size": "4",
    }
)
STATIC_INSTANCES = ("i1", "i2")
PROTOCOLS = (("range", b"\x00\x00\x00\x00\x00\x00"), ("roundrobin", b"rr"))


def durable_view(group: Group) -> tuple[object, ...]:
    return (
        group.generation,
        group.protocol_type,
        group.protocol_name,
        group.leader_id,
        tuple(
            (m.member_id, m.group_instance_id, m.assignment, m.session_timeout_ms)
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        ),
    )


def identity(member_id: str) -> str:
    """Static members' ids start with their instance id ("i1-<uuid>")."""
    prefix = member_id.split("-", 1)[0]
    return prefix if prefix in STATIC_INSTANCES else member_id


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = GroupHarness(config=CONFIG, seed=7)
        self.known: dict[str, list[str]] = {g: [] for g in GROUPS}
        self.outstanding: set[int] = set()
        self.generations: dict[str, int] = {}
        self.leaders: dict[tuple[str, int], str] = {}
        self.events_checked = 0

    # -- helpers -------------------------------------------------------------------------
    def _track(self, token: int) -> None:
        self.outstanding.add(token)

    def _learn(self, group: Group) -> None:
        known = self.known[group.group_id]
        known.extend(m for m in group.members if m not in known)

    def _member(self, group_id: str, index: int) -> str:
        """Even indexes pick a current member, odd ones any id ever seen (maybe removed)."""
        group = self.h.core.group(group_id)
        current = list(group.members) if group is not None else []
        if current and index % 2 == 0:
            return current[(index // 2) % len(current)]
        known = self.known[group_id]
        return known[index % len(known)] if known else "unknown-member"

    def _generation(self, group_id: str, stale: bool) -> int:
        group = self.h.core.group(group_id)
        current = group.generation if group is not None else 0
        if not stale:
            return current
        return current - 1 if current > 0 else current + 1  # never -1: that is a simple commit

    # -- rules ---------------------------------------------------------------------------
    @rule(group_id=st.sampled_from(GROUPS), version=st.sampled_from([3, 5, 9]))
    def join_new(self, group_id: str, version: int) -> None:
        token = self.h.join(group_id, protocols=PROTOCOLS, version=version, session_timeout_ms=500)
        self._track(token)
        reply = self.h.replies.get(token)
        if isinstance(reply, JoinGroupReply) and reply.error is ErrorCode.MEMBER_ID_REQUIRED:
            self.known[group_id].append(reply.member_id)
            self._track(
                self.h.join(
                    group_id,
                    reply.member_id,
                    protocols=PROTOCOLS,
                    version=version,
                    session_timeout_ms=500,
                )
            )
        else:
            group = self.h.core.group(group_id)
            if group is not None:
                self._learn(group)

    @rule(group_id=st.sampled_from(GROUPS), instance=st.sampled_from(STATIC_INSTANCES))
    def join_static(self, group_id: str, instance: str) -> None:
        self._track(
            self.h.join(group_id, protocols=PROTOCOLS, instance_id=instance, session_timeout_ms=500)
        )
        group = self.h.core.group(group_id)
        if group is not None:
            self._learn(group)

    @precondition(lambda self: any(self.known.values()))
    @rule(group_id=st.sampled_from(GROUPS), index=st.integers(0, 20), swap=st.booleans())
    def rejoin(self, group_id: str, index: int, swap: bool) -> None:
        protocols = PROTOCOLS[::-1] if swap else PROTOCOLS
        self._track(
            self.h.join(
                group_id, self._member(group_id, index), protocols=protocols, session_timeout_ms=500
            )
        )

    @precondition(lambda self: any(self.known.values()))
    @rule(
        group_id=st.sampled_from(GROUPS),
        index=st.integers(0, 20),
        stale=st.booleans(),
        version=st.sampled_from([3, 5]),
    )
    def sync(self, group_id: str, index: int, stale: bool, version: int) -> None:
        member_id = self._member(group_id, index)
        group = self.h.core.group(group_id)
        assignments = (
            tuple((m, f"{m}@{group.generation}".encode()) for m in group.members)
            if group is not None
            else ()
        )
        # v3 carries no protocol fields; v5 must carry both (spec §1.8).
        self._track(
            self.h.send(
                SyncGroup(
                    group_id,
                    self._generation(group_id, stale),
                    member_id,
                    assignments,
                    protocol_type="consumer" if version == 5 else None,
                    protocol_name=(group.protocol_name if group else None)
                    if version == 5
                    else None,
                    version=version,
                )
            )
        )

    @precondition(lambda self: any(self.known.values()))
    @rule(group_id=st.sampled_from(GROUPS), index=st.integers(0, 20), stale=st.booleans())
    def heartbeat(self, group_id: str, index: int, stale: bool) -> None:
        self.h.heartbeat(group_id, self._member(group_id, index), self._generation(group_id, stale))

    @precondition(lambda self: any(self.known.values()))
    @rule(group_id=st.sampled_from(GROUPS), index=st.integers(0, 20))
    def leave(self, group_id: str, index: int) -> None:
        self.h.leave(group_id, LeavingMember(self._member(group_id, index)))

    @rule(
        group_id=st.sampled_from(GROUPS),
        index=st.integers(0, 20),
        kind=st.sampled_from(["current", "stale", "simple"]),
        partition=st.integers(0, 2),
        offset=st.integers(0, 1000),
    )
    def commit(self, group_id: str, index: int, kind: str, partition: int, offset: int) -> None:
        tp = (TOPIC, partition)
        before = self.h.committed(group_id, tp)[tp]
        group = self.h.core.group(group_id)
        if kind == "simple":
            errors = self.h.commit(group_id, {tp: offset})
        else:
            generation = self._generation(group_id, stale=kind == "stale")
            errors = self.h.commit(
                group_id,
                {tp: offset},
                member_id=self._member(group_id, index),
                generation=generation,
            )
            if group is None or generation != group.generation:
                assert errors[tp] is not ErrorCode.NONE
        after = self.h.committed(group_id, tp)[tp]
        if errors[tp] is ErrorCode.NONE:
            assert after == offset
        else:
            assert after == before, "a rejected commit changed an offset"

    @rule(group_id=st.sampled_from(GROUPS))
    def settle(self, group_id: str) -> None:
        """Behave like well-mannered clients: every member rejoins, then everyone syncs."""
        group = self.h.core.group(group_id)
        if group is None or not group.members:
            return
        for member_id in list(group.members):
            member = group.members.get(member_id)
            if member is not None and member.join_token is None:
                instance = member.group_instance_id
                self._track(
                    self.h.join(
                        group_id,
                        member_id,
                        protocols=PROTOCOLS,
                        instance_id=instance,
                        session_timeout_ms=500,
                    )
                )
        if group.state is GroupState.JOINING:
            self.h.advance(100)
        if group.state is GroupState.AWAITING_SYNC and group.leader_id is not None:
            leader = group.leader_id
            members = list(group.members)
            assignments = tuple((m, f"{m}@{group.generation}".encode()) for m in members)
            generation = group.generation
            self._track(
                self.h.send(SyncGroup(group_id, generation, leader, assignments, version=3))
            )
            for m in members:
                if m != leader:
                    self._track(self.h.send(SyncGroup(group_id, generation, m, version=3)))

    @rule(ms=st.sampled_from([1, 50, 100, 300, 501, 5_000, 30_001]))
    def advance(self, ms: int) -> None:
        self.h.advance(ms)

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def one_leader_per_generation(self) -> None:
        for token in list(self.outstanding):
            reply = self.h.replies.get(token)
            if not isinstance(reply, JoinGroupReply) or reply.error is not ErrorCode.NONE:
                continue
            group_id = next((g for g in GROUPS if reply.member_id in self.known[g]), None)
            if group_id is None or not reply.leader:
                continue
            # A static member that replaces itself keeps leadership under a new member id
            # (KIP-345), so leaders are compared by identity: the instance id when static.
            leader = self.leaders.setdefault((group_id, reply.generation_id), reply.leader)
            assert identity(leader) == identity(reply.leader), (group_id, leader, reply.leader)
        for group in self.h.core.groups().values():
            if group.members:
                assert group.leader_id in group.members, group
            else:
                assert group.leader_id is None or group.state is GroupState.JOINING, group

    @invariant()
    def every_event_conforms_to_the_schema(self) -> None:
        for event in self.h.events[self.events_checked :]:
            line = event.to_json_dict(node=1)
            assert check_event(line) is None, (line, check_event(line))
        self.events_checked = len(self.h.events)

    @invariant()
    def generation_never_decreases(self) -> None:
        for group_id, group in self.h.core.groups().items():
            assert group.generation >= self.generations.get(group_id, 0)
            self.generations[group_id] = group.generation

    @invariant()
    def every_unanswered_request_is_parked_by_a_live_member(self) -> None:
        parked = self.h.parked()
        for token in self.outstanding:
            if token not in self.h.replies:
                assert token in parked, f"request {token} is neither answered nor parked"

    @invariant()
    def replay_rebuilds_the_durable_state(self) -> None:
        fresh = GroupCoordinatorCore(CONFIG, SplitMix64(1))
        by_partition: dict[int, list[object]] = {p: [] for p in range(4)}
        for record in self.h.records:
            by_partition[fresh.partition_for(record.group_id)].append(record)
        for partition, records in by_partition.items():
            fresh.load(partition, records, self.h.clock.now_ms())  # type: ignore[arg-type]
        live = self.h.core.groups()
        for group_id, group in live.items():
            loaded = fresh.group(group_id)
            assert loaded is not None, f"{group_id} lost by replay"
            assert loaded.offsets == group.offsets
            if group.state is GroupState.STABLE:
                assert durable_view(loaded) == durable_view(group)
                assert loaded.kafka_state == group.kafka_state
        assert set(fresh.groups()) == set(live)

    def teardown(self) -> None:
        # A long quiet period: every session expires, so every request must have an answer.
        self.h.advance(10 * 60_000)
        unanswered = [t for t in self.outstanding if t not in self.h.replies]
        assert not unanswered, f"never answered: {unanswered}"


CoordinatorMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCoordinatorProperties = CoordinatorMachine.TestCase
