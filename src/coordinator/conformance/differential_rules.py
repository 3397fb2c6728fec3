"""The rules of a differential run, as Hypothesis's stateful testing draws them: a state
machine whose every instance is one run of a `Session` and whose rules are the steps (`steps`)
a client may take next, drawn mostly from members (a stranger's requests are refused) and
never for a slot whose connection waits for a parked answer."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from coordinator.conformance.differential_session import Session
from coordinator.conformance.lockstep import Divergence
from coordinator.conformance.steps import (
    BEAT_KINDS,
    COMMIT_MODES,
    CONSUMER_GROUP,
    CONSUMER_SLOTS,
    GROUPS,
    PARTITIONS,
    PROTOCOL_CHOICES,
    REGEX_KIND,
    SLOTS,
    Beat,
    Commit,
    Describe,
    Fetch,
    Heartbeat,
    Join,
    Leave,
    Step,
    Sync,
    Wait,
)
from coordinator.conformance.timing import TimingInconclusive

#: A flag that is mostly off (Hypothesis shrinks it to off).
RARELY = st.sampled_from((False, False, False, True))
#: The waits a timed run draws: below its rebalance timeout, between that and its session, and
#: past the session (`differential_session.TIMED_SESSION_MS`).
WAITS_MS = (100, 450, 1400)
#: Waits per timed run at the most: they cost real time.
MAX_WAITS = 2


def machine_for(session: Session) -> type[RuleBasedStateMachine]:
    """A state machine class whose every instance is one run of `session`."""

    kinds = (*BEAT_KINDS, REGEX_KIND) if session.regex else BEAT_KINDS

    class DifferentialMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.lockstep = session.start()

        def _apply(self, step: Step) -> None:
            try:
                session.run(self.lockstep.apply(step))
            except Divergence as exc:
                session.last_divergence = exc
                raise
            except TimingInconclusive:
                session.inconclusive += 1
                assume(False)  # the run proves nothing either way: discarded

        def _has_idle_slot(self) -> bool:
            return bool(self.lockstep.idle_slots())

        def _slot(self, data: st.DataObject, idle: bool = False) -> str:
            """Mostly a slot that is a member (its requests reach the group's state), sometimes
            any (a stranger's requests are refused)."""
            allowed = self.lockstep.idle_slots() if idle else list(SLOTS)
            members = [s for s in self.lockstep.with_ids() if s in allowed]
            return data.draw(st.sampled_from([*members, *members, *allowed]), label="slot")

        # Two join rules: a member needs two joins to get in (KIP-394), and one to leave.
        @precondition(_has_idle_slot)
        @rule(data=st.data(), protocols=st.sampled_from(PROTOCOL_CHOICES), fresh=RARELY)
        def join(self, data: st.DataObject, protocols: tuple[str, ...], fresh: bool) -> None:
            self._apply(Join(self._slot(data, idle=True), protocols, fresh))

        @precondition(_has_idle_slot)
        @rule(data=st.data())
        def rejoin(self, data: st.DataObject) -> None:
            self._apply(Join(self._slot(data, idle=True)))

        @precondition(_has_idle_slot)
        @rule(data=st.data())
        def sync(self, data: st.DataObject) -> None:
            self._apply(Sync(self._slot(data, idle=True)))

        @rule(data=st.data(), stale=RARELY)
        def heartbeat(self, data: st.DataObject, stale: bool) -> None:
            self._apply(Heartbeat(self._slot(data), stale))

        @rule(data=st.data())
        def leave(self, data: st.DataObject) -> None:
            self._apply(Leave(self._slot(data)))

        @rule(
            data=st.data(),
            partition=st.sampled_from(PARTITIONS),
            offset=st.integers(0, 99),
            mode=st.sampled_from(COMMIT_MODES),
        )
        def commit(self, data: st.DataObject, partition: int, offset: int, mode: str) -> None:
            self._apply(Commit(self._slot(data), partition, offset, mode))

        @rule(group=st.sampled_from(GROUPS), fetch=st.booleans())
        def observe(self, group: str, fetch: bool) -> None:
            self._apply(Fetch(group) if fetch else Describe(group))

        def _may_wait(self) -> bool:
            return session.timed and self.waits < MAX_WAITS

        waits = 0

        @precondition(_may_wait)
        @rule(ms=st.sampled_from(WAITS_MS))
        def wait(self, ms: int) -> None:
            self.waits += 1
            self._apply(Wait(ms))

        def _consumer_groups(self) -> bool:
            return session.consumer_groups

        @precondition(_consumer_groups)
        @rule(slot=st.sampled_from(CONSUMER_SLOTS), kind=st.sampled_from(kinds))
        def beat(self, slot: str, kind: str) -> None:
            self._apply(Beat(slot, kind))

        @precondition(_consumer_groups)
        @rule(fetch=st.booleans())
        def observe_consumer_group(self, fetch: bool) -> None:
            if fetch or not session.consumer_group_describe:
                self._apply(Fetch(CONSUMER_GROUP))
            else:
                self._apply(Describe(CONSUMER_GROUP))

        @precondition(_consumer_groups)
        @rule(
            slot=st.sampled_from(CONSUMER_SLOTS),
            partition=st.sampled_from(PARTITIONS),
            offset=st.integers(0, 99),
            mode=st.sampled_from(COMMIT_MODES),
        )
        def commit_consumer_group(self, slot: str, partition: int, offset: int, mode: str) -> None:
            self._apply(Commit(slot, partition, offset, mode))

        def teardown(self) -> None:
            try:
                session.end(self.lockstep)
            except Divergence as exc:
                session.last_divergence = exc
                raise

    return DifferentialMachine
