"""What the runs of one differential check share (`Session`: the broker, an event loop, pooled
connections, the runs' topic, counts) and what they add up to (`DifferentialReport`); a
`Session` starts each run as a `Lockstep` on groups of its own and ends it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.broker_probes import (
    coordinator_knows_the_topic,
    resolves_regexes_at_once,
)
from coordinator.conformance.broker_side import BrokerSide, ConnectionPool
from coordinator.conformance.lockstep import Divergence, Lockstep
from coordinator.conformance.model_side import ModelSide
from coordinator.conformance.step_requests import KIP848_COMMIT_VERSION
from coordinator.conformance.steps import (
    CONSUMER_GROUP,
    CONSUMER_SLOTS,
    GROUPS,
    PARTITIONS,
    SLOTS,
    group_of,
)
from coordinator.wire.api_keys import ApiKey
from rebalance.topics import TopicInfo

T = TypeVar("T")

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
            probe = f"differential-{self.id}"
            self.run(
                coordinator_knows_the_topic(
                    self.broker, self.pool, self.topic, f"{probe}-topic-probe"
                )
            )
            topic_id = self.topics[0].topic_id
            self.regex = self.run(
                resolves_regexes_at_once(
                    self.broker, self.pool, self.topic, topic_id, f"{probe}-regex-probe"
                )
            )

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
