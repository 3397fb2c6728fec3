"""Properties of client-balance groups under random nodes that register, release, lose answers,
crash and come back: a partition never has two live holders, and one heartbeat round of
well-behaved nodes makes the coordinator's view the union of what they report."""

from __future__ import annotations

from client_balance_harness import SESSION_MS, ClientBalanceHarness
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from rebalance.client_balance.group import freeze, thaw
from rebalance.client_balance.timers import client_balance_session_key
from rebalance.errors import ErrorCode

NODES = ("n0", "n1", "n2")
PARTITIONS = 6
node = st.sampled_from(NODES)
partition = st.integers(0, PARTITIONS - 1)


class ClientBalanceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = ClientBalanceHarness(t=PARTITIONS)
        #: What each node believes it holds (None: not started, or it knows it was dropped).
        self.local: dict[str, set[tuple[str, int]] | None] = dict.fromkeys(NODES)

    def _live(self, name: str) -> bool:
        group = self.h.core.group("g")
        deadline = self.h.core.armed_timers().get(client_balance_session_key("g", name))
        return (
            group is not None
            and name in group.members
            and deadline is not None
            and deadline > self.h.clock.now_ms()
        )

    @rule(name=node)
    def start(self, name: str) -> None:
        if self.local[name] is not None:
            return
        reply = self.h.join_node(name, source_count=0, node_id=0)
        if reply.error is ErrorCode.NONE:
            self.local[name] = thaw(reply.held)

    @rule(name=node, p=partition, answer_lost=st.booleans())
    def register(self, name: str, p: int, answer_lost: bool) -> None:
        if self.local[name] is None:
            return
        holder = self.h.group().holders.get(("t", p)) if self.h.core.group("g") else None
        holder_live = holder is not None and holder != name and self._live(holder)
        reply = self.h.register(name, ("t", p))
        granted = reply.partitions and reply.partitions[0].error is ErrorCode.NONE
        assert not (granted and holder_live), f"t-{p} granted to {name} while {holder} is live"
        local = self.local[name]
        if granted and not answer_lost and local is not None:
            local.add(("t", p))

    @rule(name=node, p=partition, answer_lost=st.booleans())
    def release(self, name: str, p: int, answer_lost: bool) -> None:
        local = self.local[name]
        if local is None or ("t", p) not in local:
            return
        self.h.release(name, ("t", p))
        if not answer_lost:
            local.discard(("t", p))

    @rule(name=node)
    def heartbeat(self, name: str) -> None:
        self._beat(name)

    @rule(name=node)
    def crash(self, name: str) -> None:
        """The process dies: nothing is sent; its session runs out on the coordinator."""
        self.local[name] = None

    @rule(ms=st.integers(0, SESSION_MS))
    def wait(self, ms: int) -> None:
        self.h.advance(ms)

    def _beat(self, name: str) -> set[tuple[str, int]] | None:
        local = self.local[name]
        if local is None:
            return None
        report = set(local)
        reply = self.h.beat(name, freeze(report))
        if reply.error is not ErrorCode.NONE:
            self.local[name] = None  # dropped: it starts again with nothing
            return None
        self.local[name] = thaw(reply.held)
        return report

    @invariant()
    def no_partition_has_two_holders(self) -> None:
        group = self.h.core.group("g")
        if group is None:
            return
        seen: dict[tuple[str, int], str] = {}
        for member_id, n in group.members.items():
            for tp in n.held:
                assert tp not in seen, f"{tp} held by {seen[tp]} and {member_id}"
                seen[tp] = member_id
                assert group.holders[tp] == member_id
        assert set(seen) == set(group.holders)

    def teardown(self) -> None:
        """Crashed nodes' sessions run out while the others heartbeat; then two rounds without
        time passing: after the first every node's view is the coordinator's, so the second
        round's reports are exactly what it records."""
        for _ in range(3):
            self.h.advance(SESSION_MS // 2)
            for name in NODES:
                self._beat(name)
        reports: set[tuple[str, int]] = set()
        for name in NODES:
            report = self._beat(name)
            if report is not None:
                reports |= report
        group = self.h.core.group("g")
        view = set(group.holders) if group is not None else set()
        assert view == reports, (view, reports)
        assert self.h.bad_events() == []


ClientBalanceMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestClientBalanceProperties = ClientBalanceMachine.TestCase
