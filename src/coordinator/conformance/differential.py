"""The differential run: random client actions against the broker and the model in lockstep.

Hypothesis's stateful testing draws sequences of steps (`steps`: joins, syncs, heartbeats,
leaves, commits, fetches, describes from six members of two classic groups; KIP-848 heartbeats
from three of a consumer group) and `Lockstep` sends each
to the broker under test and to the pure core; the first answer that differs fails the run, and
Hypothesis shrinks the sequence to a short one that still fails. The failure names the diverging
request and prints the command that runs the same steps again (`rebalance conformance
--bootstrap HOST:PORT --replay '...'`, which calls `replay`).

Each Hypothesis example is one run on groups of its own; connections are pooled across runs.
Hypothesis is imported here only, so the rest of the package works without it installed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, assume, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky, Unsatisfiable
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
    run_state_machine_as_test,
)

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.broker_side import BrokerSide, ConnectionPool
from coordinator.conformance.lockstep import (
    ANSWER_TIMEOUT_S,
    KIP848_COMMIT_VERSION,
    LONG_MS,
    Divergence,
    Lockstep,
    StepNotPossible,
)
from coordinator.conformance.model_side import ModelSide
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
    group_of,
    parse_steps,
)
from coordinator.conformance.timing import TimingInconclusive
from coordinator.wire.api_keys import ApiKey
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.topics import TopicInfo

T = TypeVar("T")

#: Runs per Hypothesis call: between calls the run checks its time budget.
BATCH_RUNS = 40
#: A flag that is mostly off (Hypothesis shrinks it to off).
RARELY = st.sampled_from((False, False, False, True))
#: Partitions of the topic the runs commit to.
TOPIC_PARTITIONS = len(PARTITIONS)

# A timed run (`timed=True`): every join asks for these timeouts, and `wait` steps let time pass
# (a KIP-848 member asks for the rebalance timeout only: its session is the broker's).
# The session outlasts the rebalance timeout threefold, so a sync or join phase ends on its own
# timer before the sessions of the members it waits for do. The waits drawn are well below the
# rebalance timeout, between the two, and above the session; where a timer is due near a wait's
# end the wait is made longer (`coordinator.conformance.timing`), never left near a deadline.
TIMED_SESSION_MS = 900
TIMED_REBALANCE_MS = 300
#: The KIP-848 group takes part in a timed run where the broker's member session (a broker
#: setting, `group.consumer.session.timeout.ms`: members do not choose it) is at most this.
TIMED_CONSUMER_SESSION_MS = 900
WAITS_MS = (100, 450, 1400)
#: Waits per timed run at the most: they cost real time.
MAX_WAITS = 2
#: How long a broker that resolves regexes in the background is given to assign the topic to a
#: member subscribed by a regex matching it (Kafka: milliseconds, one scan of the topic names).
REGEX_RESOLUTION_S = 2.0
#: How long the broker's group coordinator is given to learn the runs' new topic.
TOPIC_KNOWN_S = 10.0


class RegexNeverResolved(Divergence):
    """A member subscribed by a regex matching the run's topic was never assigned it."""


@dataclass(frozen=True)
class DifferentialReport:
    runs: int
    steps: int
    seconds: float
    #: New leaders the broker chose where Kafka's choice is free, which the model took over.
    adopted_leaders: int
    #: The divergence (the shrunk run, as steps), or None when every run agreed.
    failure: str | None
    #: A replay's steps with the answers (empty for a random run).
    log: tuple[str, ...] = ()
    #: Timed runs: real time waited in `wait` steps (s), and runs discarded because a step came
    #: too near a deadline for the machine's pace to tell which side of it the broker was on.
    waited_s: float = 0.0
    inconclusive: int = 0
    #: The groups that took part (the KIP-848 group `c` only where the broker can have it).
    groups: str = "a b"
    #: Whether `beat cN regex` steps took part: None without group c, False where the broker
    #: resolves a new regex in the background (Kafka 4.x) rather than at once as the model.
    regex: bool | None = None

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        verdict = "no divergence" if self.failure is None else "DIVERGED"
        timed = (
            f"; {self.waited_s:.1f} s waited, {self.inconclusive} runs inconclusive"
            if self.waited_s else ""
        )  # fmt: skip
        groups = f"groups {self.groups}: " if self.waited_s else ""
        if self.regex is False:
            timed += "; regex steps left out: the broker resolves regexes in the background"
        return (
            f"differential run: {groups}{verdict} in {self.steps} steps over {self.runs} runs, "
            f"{self.seconds:.1f} s ({self.steps_per_s:.0f} steps/s; "
            f"{self.adopted_leaders} leaders chosen by the broker adopted{timed})"
        )


class Session:
    """What the runs of one differential check share: broker, event loop, connections, counts."""

    def __init__(
        self, broker: BrokerUnderTest, loop: asyncio.AbstractEventLoop, timed: bool = False
    ) -> None:
        self.broker = broker
        self.loop = loop
        self.timed = timed
        self.waited_ms = 0
        self.inconclusive = 0
        self.pool = ConnectionPool(broker)
        #: Group ids are new in every session and run: nothing is left from an earlier one.
        self.id = uuid.uuid4().hex[:8]
        self.topic = f"differential-{broker.run_id}"
        self.runs = 0
        self.steps = 0
        self.adoptions = 0
        self.topics: list[TopicInfo] = []
        #: The pattern of `beat cN regex` steps (matching `topic`), None where they are left out.
        self.regex: str | None = None
        #: The last divergence a run raised: reported if shrinking ends in Hypothesis's Flaky
        #: without one (a candidate discarded as inconclusive where the first run diverged).
        self.last_divergence: Divergence | None = None

    def report(
        self, seconds: float, failure: str | None, log: tuple[str, ...] = ()
    ) -> DifferentialReport:
        return DifferentialReport(
            self.runs, self.steps, seconds, self.adoptions, failure, log,
            self.waited_ms / 1000, self.inconclusive, " ".join(self.groups),
            self.regex is not None if self.consumer_groups else None,
        )  # fmt: skip

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def prepare(self) -> None:
        if not self.run(self.broker.ensure_topic(self.topic, TOPIC_PARTITIONS)):
            raise RuntimeError(f"the broker did not create the topic {self.topic!r} for commits")
        if self.timed:
            least = self.broker.setting_ms("group.min.session.timeout.ms")
            if least is None or least > TIMED_SESSION_MS:
                raise RuntimeError(
                    f"a timed run needs group.min.session.timeout.ms <= {TIMED_SESSION_MS} "
                    f"(the broker's: {least})"
                )
        # KIP-848 steps need ConsumerGroupHeartbeat v1 (client-chosen member ids), the topic's
        # id (the model must assign the same topic) and one target assignment per epoch bump
        # (batching by time would make the model, whose clock stands still, wait forever).
        batching = self.broker.setting_ms("group.consumer.assignment.interval.ms") or 0
        heartbeats = self.broker.versions.get(ApiKey.CONSUMER_GROUP_HEARTBEAT, -1) >= 1
        commits = self.broker.advertised.get(ApiKey.OFFSET_COMMIT, -1) >= KIP848_COMMIT_VERSION
        if heartbeats and commits and not batching and self._consumer_sessions_fit():
            self.topics = [self.run(self.broker.topic_info(self.topic))]
            self.run(self._coordinator_knows_the_topic())
            self.regex = self.run(self._resolves_regexes_at_once())

    async def _coordinator_knows_the_topic(self) -> None:
        """Wait until a lone member subscribing to the topic by name is assigned it: Kafka's
        group coordinator learns a new topic after Metadata shows it (its own metadata image),
        and a run's first join before that would be assigned nothing, where the model's is."""
        group_id = f"differential-{self.id}-topic-probe"
        member_id = str(uuid.uuid4())
        version = self.broker.versions[ApiKey.CONSUMER_GROUP_HEARTBEAT]
        side = BrokerSide(self.broker, self.pool)
        await side.open({"probe": group_id})

        async def beat(command: ConsumerGroupHeartbeat) -> ConsumerGroupHeartbeatReply:
            reply = await asyncio.wait_for(await side.send("probe", command), ANSWER_TIMEOUT_S)
            assert isinstance(reply, ConsumerGroupHeartbeatReply)
            return reply

        join = ConsumerGroupHeartbeat(
            group_id, member_id, 0, rebalance_timeout_ms=LONG_MS,
            subscribed_topic_names=(self.topic,), topic_partitions=(), version=version,
        )  # fmt: skip
        try:
            reply = await beat(join)
            deadline = time.monotonic() + TOPIC_KNOWN_S
            while not reply.error and not reply.assignment and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
                again = ConsumerGroupHeartbeat(
                    group_id, member_id, reply.member_epoch, topic_partitions=(), version=version
                )
                reply = await beat(again)
        finally:
            try:
                await beat(ConsumerGroupHeartbeat(group_id, member_id, -1, version=version))
            finally:
                await side.close()

    async def _resolves_regexes_at_once(self) -> str | None:
        """The pattern `beat cN regex` subscribes with, where the broker resolves a new regex
        as the model does: at once, a lone member joining with it assigned the topic in the
        answer. Kafka 4.x resolves a regex no member of the group used before in the
        background (GroupMetadataManager.maybeUpdateRegularExpressions schedules it on the
        coordinator's executor, without bumping the group epoch); the resolution then bumps the
        group epoch and the member's next heartbeat gets the new target. Its first answer
        assigns nothing and every later epoch is one ahead of the model's: no normalising of
        answers makes the two agree, so the steps are left out there (None). A broker that
        never assigns the topic to the member is a divergence (`RegexNeverResolved`)."""
        pattern = f"differential[-]{self.broker.run_id}"  # a regex that matches `topic` only
        group_id = f"differential-{self.id}-regex-probe"
        member_id = str(uuid.uuid4())
        version = self.broker.versions[ApiKey.CONSUMER_GROUP_HEARTBEAT]
        topic_id = self.topics[0].topic_id
        side = BrokerSide(self.broker, self.pool)
        await side.open({"probe": group_id})

        async def beat(command: ConsumerGroupHeartbeat) -> ConsumerGroupHeartbeatReply:
            reply = await asyncio.wait_for(await side.send("probe", command), ANSWER_TIMEOUT_S)
            assert isinstance(reply, ConsumerGroupHeartbeatReply)
            if reply.error:
                raise RegexNeverResolved(
                    f"a join subscribing by the regex {pattern!r}: {reply.error.name.lower()}"
                )
            return reply

        def assigned(reply: ConsumerGroupHeartbeatReply) -> bool:
            return any(t == topic_id and ps for t, ps in reply.assignment or ())

        try:
            join = ConsumerGroupHeartbeat(
                group_id, member_id, 0, rebalance_timeout_ms=LONG_MS, subscribed_topic_names=(),
                subscribed_topic_regex=pattern, topic_partitions=(), version=version,
            )  # fmt: skip
            reply = await beat(join)
            if assigned(reply):
                return pattern
            deadline = time.monotonic() + REGEX_RESOLUTION_S
            while time.monotonic() < deadline:  # resolved in the background, or never?
                await asyncio.sleep(0.05)
                again = ConsumerGroupHeartbeat(
                    group_id, member_id, reply.member_epoch, topic_partitions=(), version=version
                )
                reply = await beat(again)
                if assigned(reply):
                    return None
            raise RegexNeverResolved(
                f"a lone member subscribed by the regex {pattern!r} was not assigned the topic "
                f"{self.topic!r} it matches within {REGEX_RESOLUTION_S:.0f} s"
            )
        finally:
            leave = ConsumerGroupHeartbeat(group_id, member_id, -1, version=version)
            try:
                await asyncio.wait_for(await side.send("probe", leave), ANSWER_TIMEOUT_S)
            finally:
                await side.close()

    def _consumer_sessions_fit(self) -> bool:
        """A timed run's KIP-848 members need sessions its waits outlast: the broker's
        `group.consumer.session.timeout.ms` at most `TIMED_CONSUMER_SESSION_MS` (else the
        timed run covers the classic groups only). Where time stands still any will do."""
        if not self.timed:
            return True
        session = self.broker.setting_ms("group.consumer.session.timeout.ms")
        return session is not None and session <= TIMED_CONSUMER_SESSION_MS

    @property
    def consumer_groups(self) -> bool:
        return bool(self.topics)

    @property
    def groups(self) -> tuple[str, ...]:
        return (*GROUPS, CONSUMER_GROUP) if self.consumer_groups else GROUPS

    @property
    def consumer_group_describe(self) -> bool:
        return self.consumer_groups and ApiKey.CONSUMER_GROUP_DESCRIBE in self.broker.versions

    def start(self) -> Lockstep:
        self.runs += 1
        groups = self.groups
        slots = (*SLOTS, *CONSUMER_SLOTS) if self.consumer_groups else SLOTS
        group_ids = {g: f"differential-{self.id}-{self.runs}-{g}" for g in groups}
        side = BrokerSide(self.broker, self.pool)
        names = {slot: group_ids[group_of(slot)] for slot in slots}
        names |= {f"admin-{g}": group_ids[g] for g in groups}
        self.run(side.open(names))
        model = ModelSide(self.broker.settings, self.topics)
        topic_names = {t.topic_id: t.name for t in self.topics}
        timeouts = (TIMED_SESSION_MS, TIMED_REBALANCE_MS) if self.timed else None
        return Lockstep(
            model, side, group_ids, self.topic, self.broker.versions, topic_names, timeouts,
            self.regex,
        )  # fmt: skip

    def end(self, lockstep: Lockstep) -> None:
        self.steps += lockstep.steps
        self.adoptions += lockstep.adoptions
        self.waited_ms += lockstep.waited_ms
        try:
            self.run(lockstep.finish())
        finally:
            self.run(lockstep.broker.close())


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


def run_differential(
    broker: BrokerUnderTest,
    *,
    steps: int = 10_000,
    steps_per_run: int = 50,
    budget_s: float = 300.0,
    timed: bool = False,
) -> DifferentialReport:
    """Runs of up to `steps_per_run` steps each until `steps` steps were made, one diverged
    (shrinking included in the counts) or `budget_s` passed. Call from outside any running
    event loop. `timed`: short timeouts and `wait` steps (see `TIMED_SESSION_MS`)."""
    with _session(broker, timed) as session:
        started = time.monotonic()
        try:
            session.prepare()
        except RegexNeverResolved as exc:
            return session.report(time.monotonic() - started, str(exc))
        failure = None
        while failure is None and session.steps < steps and time.monotonic() - started < budget_s:
            # Runs mostly make their full length; batches keep an eye on the budget.
            wanted = min((steps - session.steps) // steps_per_run + 1, BATCH_RUNS)
            try:
                run_state_machine_as_test(
                    machine_for(session),
                    settings=settings(
                        max_examples=wanted,
                        stateful_step_count=steps_per_run,
                        deadline=None,
                        database=None,
                        phases=(Phase.generate, Phase.shrink),
                        suppress_health_check=list(HealthCheck),
                        print_blob=False,
                        verbosity=Verbosity.quiet,  # the report says it all: nothing on stdout
                    ),
                )
            except Divergence as exc:
                failure = str(exc)
            except (Flaky, Unsatisfiable) as exc:
                found = [e for e in getattr(exc, "exceptions", ()) if isinstance(e, Divergence)]
                found = found or ([session.last_divergence] if session.last_divergence else [])
                if not found:
                    # No divergence in this batch: Hypothesis saw the same steps discarded as
                    # inconclusive in one run and not in another (timing, in a timed run), or
                    # every run discarded. Inconclusive, not failed; the next batch goes on.
                    session.inconclusive += 1
                    continue
                # A divergence the same steps did not show again: timing (see `lockstep`).
                failure = "a divergence that did not recur when the same steps ran again:\n" + (
                    str(found[0])
                )
        return session.report(time.monotonic() - started, failure)


def replay(broker: BrokerUnderTest, text: str) -> DifferentialReport:
    """Run the steps of `text` (as a failure prints them) once, in lockstep; timed (short
    timeouts) if it has a `wait` step."""
    steps = parse_steps(text)
    with _session(broker, any(isinstance(s, Wait) for s in steps)) as session:
        started = time.monotonic()
        try:
            session.prepare()
        except RegexNeverResolved as exc:
            return session.report(time.monotonic() - started, str(exc))
        failure = None
        lockstep = session.start()
        try:
            for step in steps:
                session.run(lockstep.apply(step))
        except (Divergence, StepNotPossible) as exc:
            failure = str(exc)
        except TimingInconclusive as exc:
            session.inconclusive += 1
            failure = f"inconclusive (the machine was too slow for the timeouts): {exc}"
        finally:
            try:
                session.end(lockstep)
            except Divergence as exc:
                failure = failure or str(exc)
        log = tuple(lockstep.log) if failure is None else ()
        return session.report(time.monotonic() - started, failure, log)


class _session:
    """A session on an event loop of its own, its pooled connections closed at the end."""

    def __init__(self, broker: BrokerUnderTest, timed: bool = False) -> None:
        self.loop = asyncio.new_event_loop()
        self.session = Session(broker, self.loop, timed)

    def __enter__(self) -> Session:
        return self.session

    def __exit__(self, *exc: object) -> None:
        try:
            self.loop.run_until_complete(self.session.pool.close())
        finally:
            self.loop.close()
