"""The model side of the differential run: the pure core, the executable model of Kafka's
coordinator, configured as the broker under test says it is, on a manual clock.

Time: the model's clock stands still between steps, and the run's session and rebalance
timeouts are long (minutes), so their timers never fire within a run. Short timers are the
initial rebalance delay (`group.initial.rebalance.delay.ms`, often 0 on test brokers) and those
Kafka arms for "now" (a join phase of a group with no members left ends at once): after every
step the model fires the timers due within the initial delay, as the broker does in real time
while the run waits for the answers the model gave (or for the broker's group to show the state
the timer left). So a run does not see the delay extended by joins arriving during it (the
`join.initial_delay` scenario checks the delay itself). KIP-848 sessions are the broker's
setting, not the run's: the model takes it (and its bounds) over, and the run's timing guard
(`coordinator.conformance.timing`) discards a run that lasts nearly as long as one.

In a timed run (`timed`) the clock moves in `wait` steps, and every timer fires in lockstep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coordinator.conformance.timing import RunClock
from rebalance.classic.group import Group
from rebalance.commands import Command
from rebalance.config import CoordinatorConfig
from rebalance.testing import GroupHarness
from rebalance.topics import TopicInfo, TopicMetadata

#: The broker settings the model takes over (Kafka's names; the others keep Kafka's defaults).
MODEL_SETTINGS = (
    "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "group.consumer.session.timeout.ms",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.consumer.max.size",
    "group.consumer.assignment.interval.ms",
)


class ModelSide:
    """One run's model: a fresh core; commands in, replies (possibly later) out."""

    def __init__(
        self, settings: Mapping[str, str], topics: Sequence[TopicInfo] = (), seed: int = 0
    ) -> None:
        chosen = {k: v for k, v in settings.items() if k in MODEL_SETTINGS}
        # A broker without Kafka 4.3's assignment batching computes one target per epoch bump.
        chosen.setdefault("group.consumer.assignment.interval.ms", "0")
        self.config = CoordinatorConfig.model_validate(chosen)
        self.harness = GroupHarness(self.config, seed=seed)
        # The broker's topics, with the broker's topic ids: assignments name topics by id.
        self.harness.topics_changed(TopicMetadata.of(topics))
        #: Groups whose leader the model re-elected (the old one left or did not rejoin) since
        #: the broker last showed its own choice: Kafka picks any member then.
        self.reelected: set[str] = set()
        #: Groups a timer fired for in the last `send` (the broker fires its own asynchronously).
        self.timed_groups: set[str] = set()
        self._leaders: dict[str, str | None] = {}
        #: The model's time against real time, in a timed run (`timed`); None: time stands still.
        self.clock: RunClock | None = None

    def timed(self) -> RunClock:
        """Let time pass in this run (`wait` steps): from now on every timer's arming is noted."""
        self.clock = RunClock(self.harness)
        self.clock.note_armed()
        return self.clock

    def send(self, command: Command[Any]) -> int:
        token = self.harness.send(command)
        self._settle()
        if self.clock is not None:
            self.clock.note_armed()
        return token

    def wait(self, ms: int) -> int:
        """Let `ms` or a little more pass (`RunClock.wait`); the time to wait in real time."""
        assert self.clock is not None, "a wait step in a run whose time stands still"
        waited = self.clock.wait(ms)
        self._note_leaders()
        return waited

    def answer(self, token: int) -> object | None:
        return self.harness.reply(token)

    def group(self, group_id: str) -> Group | None:
        found = self.harness.core.groups().get(group_id)
        return found if isinstance(found, Group) else None

    def adopt_leader(self, group_id: str, member_id: str) -> None:
        """Take the broker's choice of leader where Kafka's is arbitrary (see `reelected`).

        The caller checks that the choice was legal: a member of the new generation."""
        group = self.group(group_id)
        assert group is not None and member_id in group.members
        group.leader_id = member_id
        self._leaders[group_id] = member_id
        self.reelected.discard(group_id)

    def _settle(self) -> None:
        """Fire the timers due within the initial delay, then note re-elected leaders."""
        harness = self.harness
        short = self.config.group_initial_rebalance_delay_ms
        self.timed_groups = set()
        while (deadline := harness.timer.next_deadline()) is not None:
            wait = deadline - harness.clock.now_ms()
            if wait > short:
                break
            self.timed_groups |= {group_id for _, group_id, _ in harness.advance(max(wait, 0))}
        self._note_leaders()

    def _note_leaders(self) -> None:
        """Note groups whose leader the model re-elected (see `reelected`)."""
        for group_id, group in self.harness.core.groups().items():
            if not isinstance(group, Group):
                continue
            before = self._leaders.get(group_id)
            if group.leader_id is None:
                self.reelected.discard(group_id)
            elif before is not None and group.leader_id != before:
                self.reelected.add(group_id)
            self._leaders[group_id] = group.leader_id
