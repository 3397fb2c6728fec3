"""Properties of pure members against the pure coordinator, over random timing and failures.

Hypothesis draws a script: members join and close at random times, stall (a long pause, as a
GC or a stopped VM), commit what they own, and every message travels with a random delay or is
lost (requests before or after the coordinator saw them); callbacks take random time. Members,
coordinator and network share one clock (no clock drift: see docs/member.md).

Protocols: classic eager, classic cooperative, KIP-848, and the named-resources protocol
(weighted, cooperative; rebalance.member.resources). Checked at every instant of the run:

* no partition is owned (`owns(now)`: assigned and its lease not expired) by two members at once
  — so no member believes it owns a partition the coordinator gave to another member of a later
  generation;
* every OffsetCommit a member sends carries the generation that gave it those partitions, and
  when the coordinator accepts one, nobody else owns those partitions at that instant.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from member_wiring import FAST

from rebalance.classic.commands import JoinGroup
from rebalance.commands import OffsetCommit
from rebalance.errors import ErrorCode
from rebalance.member import (
    ClassicMember,
    CommitRefused,
    ConsumerEmbedded,
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    MemberConfig,
    MemberState,
    TopicsDescribed,
)
from rebalance.member.consumer import ConsumerMember, ConsumerMemberConfig
from rebalance.member.resources import ResourceEmbedded
from rebalance.replies import OffsetCommitReply
from rebalance.testing import GroupHarness
from rebalance.topics import TopicInfo, TopicMetadata

PARTITIONS = {"t": 6}
SESSION, REBALANCE, HEARTBEAT = 3000, 4000, 1000
DELAYS = st.sampled_from([0, 5, 50, 300, 1500])


@dataclass
class Node:
    name: str
    member: ClassicMember | ConsumerMember
    paused_until: int = 0
    callbacks_until: int | None = None
    request_id: int | None = None
    timeout_at: int | None = None
    commits: int = 0


@dataclass
class Sim:
    data: Any
    protocol: str  # "eager", "cooperative", "resources" (classic) or "consumer" (KIP-848)
    harness: GroupHarness = field(default_factory=lambda: GroupHarness(FAST))
    nodes: dict[str, Node] = field(default_factory=dict)
    queue: list[tuple[int, int, str, Any]] = field(default_factory=list)
    parked: dict[int, tuple[str, int]] = field(default_factory=dict)
    seq: itertools.count[int] = field(default_factory=itertools.count)
    accepted_commits: int = 0

    def __post_init__(self) -> None:
        topics = TopicMetadata.of([TopicInfo("t", "id-t", PARTITIONS["t"])])
        self.harness._absorb(self.harness.core.topics_changed(topics, 0))

    @property
    def now(self) -> int:
        return self.harness.clock.now_ms()

    def at(self, time: int, kind: str, payload: Any) -> None:
        heapq.heappush(self.queue, (time, next(self.seq), kind, payload))

    def add(self, name: str) -> None:
        if self.protocol == "consumer":
            consumer = ConsumerMemberConfig(
                "g", f"{name}-id", ("t",), session_timeout_ms=SESSION,
                rebalance_timeout_ms=REBALANCE, retry_backoff_ms=100,
            )  # fmt: skip
            self.nodes[name] = Node(name, ConsumerMember(consumer))
            return
        assignors = (
            ("cooperative-sticky",) if self.protocol == "cooperative" else ("sticky", "range")
        )
        embedded: Any = ConsumerEmbedded(("t",), assignors)
        if self.protocol == "resources":  # six named resources, weights 1 to 3
            weight = 1 + len(self.nodes) % 3
            embedded = ResourceEmbedded(tuple(f"t{n}" for n in range(6)), weight=weight)
        config = MemberConfig("g", session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE,
                              heartbeat_interval_ms=HEARTBEAT, retry_backoff_ms=100)  # fmt: skip
        self.nodes[name] = Node(name, ClassicMember(config, embedded))

    # -- the network ----------------------------------------------------------------------
    def send(self, node: Node, request: Any) -> None:
        rid = next(self.seq)
        node.request_id = rid
        timeout = REBALANCE + 5000 if isinstance(request, JoinGroup) else 2000
        node.timeout_at = self.now + timeout
        if self.data.draw(st.integers(0, 19), label="request lost") == 0:
            return
        self.at(
            self.now + self.data.draw(DELAYS, label="delay"), "request", (node.name, rid, request)
        )

    def reply(self, name: str, rid: int, reply: Any) -> None:
        if self.data.draw(st.integers(0, 19), label="reply lost") == 0:
            return
        self.at(self.now + self.data.draw(DELAYS, label="delay"), "reply", (name, rid, reply))

    def deliver_request(self, name: str, rid: int, request: Any) -> None:
        if isinstance(request, FindCoordinator):
            self.reply(name, rid, FindCoordinatorReply(ErrorCode.NONE, 0, "c", 1))
        elif isinstance(request, DescribeTopics):
            self.reply(name, rid, TopicsDescribed(dict(PARTITIONS), {"t": "id-t"}))
        else:
            token = self.harness.send(request)
            self.parked[token] = (name, rid)
            self.release()

    def release(self) -> None:
        for token in [t for t in self.parked if t in self.harness.replies]:
            name, rid = self.parked.pop(token)
            self.reply(name, rid, self.harness.replies[token])

    def commit(self, node: Node) -> None:
        member = node.member
        owned = sorted(member.owns(self.now))
        if not owned or member.state is not MemberState.STABLE:
            return
        chosen = self.data.draw(st.lists(st.sampled_from(owned), min_size=1, unique=True))
        try:
            request = member.commit({tp: node.commits for tp in chosen})
        except CommitRefused:
            return
        if isinstance(member, ClassicMember):
            assert request.generation_id == member.owned_generation == member.generation
        else:
            assert request.generation_id == member.epoch
        node.commits += 1
        delay = self.data.draw(DELAYS, label="commit delay")
        self.at(self.now + delay, "commit", (node.name, request))

    def deliver_commit(self, name: str, request: OffsetCommit) -> None:
        token = self.harness.send(request)
        reply = self.harness.replies[token]
        assert isinstance(reply, OffsetCommitReply)
        for topic, parts in reply.topics:
            for partition, code in parts:
                if code is ErrorCode.NONE:
                    self.accepted_commits += 1
                    for other in self.nodes.values():
                        if other.name != name:
                            assert (topic, partition) not in other.member.owns(self.now), (
                                f"commit by {name} accepted while {other.name} owns it"
                            )
        self.at(self.now + self.data.draw(DELAYS), "commit-reply", (name, request, reply))

    # -- the run ----------------------------------------------------------------------------
    def check(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for node in self.nodes.values():
            for tp in node.member.owns(self.now):
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {node.name} at {self.now}"
                seen[tp] = node.name

    def wakeups(self) -> list[int]:
        times: list[int] = []
        for node in self.nodes.values():
            if node.paused_until > self.now:
                times.append(node.paused_until)
                continue
            if node.callbacks_until is not None:
                times.append(node.callbacks_until)
            if node.timeout_at is not None:
                times.append(node.timeout_at)
            wake = node.member.next_wakeup_ms(self.now)
            if wake is not None:
                times.append(max(wake, self.now))
        return times

    def tick(self) -> None:
        for node in self.nodes.values():
            m = node.member
            if node.paused_until > self.now:
                continue
            if node.timeout_at is not None and self.now >= node.timeout_at:
                node.request_id = node.timeout_at = None
                m.on_failure(self.now)
            if node.callbacks_until is not None and self.now >= node.callbacks_until:
                node.callbacks_until = None
                m.changes_done()
            if node.callbacks_until is None and m.take_changes():
                node.callbacks_until = self.now + self.data.draw(DELAYS, label="callback")
            request = m.poll(self.now)
            if request is not None:
                self.send(node, request)

    def handle(self, kind: str, payload: Any) -> None:
        if kind == "request":
            self.deliver_request(*payload)
        elif kind == "reply":
            name, rid, reply = payload
            node = self.nodes[name]
            if node.request_id == rid and node.paused_until <= self.now:
                node.request_id = node.timeout_at = None
                node.member.on_reply(reply, self.now)
            elif node.request_id == rid:
                self.at(node.paused_until, kind, payload)  # read once the stall ends
        elif kind == "commit":
            self.deliver_commit(*payload)
        elif kind == "commit-reply":
            name, request, reply = payload
            self.nodes[name].member.on_commit_reply(request, reply)
        elif kind == "join":
            self.add(payload)
        elif kind == "close":
            self.nodes[payload].member.close()
        elif kind == "pause":
            name, ms = payload
            self.nodes[name].paused_until = max(self.nodes[name].paused_until, self.now + ms)
        elif kind == "commit-now":
            node = self.nodes[payload]
            if node.paused_until <= self.now:
                self.commit(node)

    def run(self, until: int) -> None:
        steps = 0
        while self.now < until:
            steps += 1
            assert steps < 20_000, "the simulation does not progress"
            self.tick()
            self.check()
            times = [*self.wakeups(), until]
            if self.queue:
                times.append(self.queue[0][0])
            timer = self.harness.timer.next_deadline()
            if timer is not None:
                times.append(timer)
            target = max(min(times), self.now)
            self.harness.advance(target - self.now)
            self.release()
            self.check()
            while self.queue and self.queue[0][0] <= self.now:
                _, _, kind, payload = heapq.heappop(self.queue)
                if kind in ("reply", "commit-reply", "pause", "commit-now", "close") and (
                    (payload if isinstance(payload, str) else payload[0]) not in self.nodes
                ):
                    continue
                self.handle(kind, payload)
                self.release()
                self.check()


EVENT = st.tuples(
    st.integers(0, 25_000),
    st.sampled_from(["join", "close", "pause", "commit-now", "commit-now"]),
    st.integers(0, 3),
    st.sampled_from([500, 2500, 6000]),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    protocol=st.sampled_from(["eager", "cooperative", "consumer", "resources"]),
    script=st.lists(EVENT, max_size=25),
)
def test_no_two_members_own_a_partition_and_commits_are_fenced(
    data: Any, protocol: str, script: list[tuple[int, str, int, int]]
) -> None:
    sim = Sim(data, protocol)
    for name in ("m0", "m1"):
        sim.at(0, "join", name)
    joined = {"m0", "m1"}
    for time, kind, index, ms in sorted(script):
        name = f"m{index}"
        if kind == "join":
            if name in joined:
                continue
            joined.add(name)
            sim.at(time, "join", name)
        elif name in joined:
            sim.at(time, kind, (name, ms) if kind == "pause" else name)
    sim.run(30_000)


def test_the_simulation_reaches_a_stable_group_when_nothing_fails() -> None:
    """The harness itself: with no loss and no stalls every member ends up owning a share."""

    class Calm:
        def draw(self, strategy: Any, label: str = "") -> Any:
            return 1 if "lost" in label else 0

    for protocol in ("eager", "cooperative", "consumer", "resources"):
        sim = Sim(Calm(), protocol)
        for name in ("m0", "m1", "m2"):
            sim.at(0, "join", name)
        sim.run(10_000)
        owned = [n.member.owns(sim.now) for n in sim.nodes.values()]
        if protocol == "resources":  # weights 1, 2, 3
            assert [len(o) for o in owned] == [1, 2, 3]
            assert frozenset().union(*owned) == {(f"t{n}", 0) for n in range(6)}
        else:
            assert sorted(len(o) for o in owned) == [2, 2, 2]
            assert frozenset().union(*owned) == {("t", p) for p in range(6)}
