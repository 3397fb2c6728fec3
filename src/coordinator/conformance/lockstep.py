"""One differential run: every step sent to the broker under test and, in lockstep, to the model
(the pure core), and their answers compared after normalising what may legitimately differ.

What may differ, and how it is normalised:

* member ids are random on both sides: each side's ids are named by slot and incarnation
  (`a0`, then `a0#2` after a `join a0 fresh`), and answers are compared by name (a KIP-848
  member's id is the client's, the same on both sides, and named by its slot);
* the leader, where Kafka's choice is arbitrary: the first member to join leads, but when the
  leader leaves or does not rejoin Kafka takes whichever member its hash map yields first. When
  the model re-elected a leader since the broker last showed one, and the broker's choice is a
  member of the new generation, the model adopts it (and the member list the generation's
  leader receives is compared as the generation's, whoever received it);
* parking: a JoinGroup or SyncGroup the model holds is left in flight on the broker; the
  broker's answer is awaited when the model answers it, and an answer the broker gives while
  the model still holds the request is a divergence;
* throttle times, client ids and hosts are not compared.

Anything else that differs (error codes, generations, leader, protocol, member lists, assignments,
offsets, group states) raises `Divergence` with the run so far, printed as replayable steps.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.conformance.answers import Answer, Normaliser, text
from coordinator.conformance.broker_side import BrokerSide
from coordinator.conformance.member_ids import consumer_member_ids
from coordinator.conformance.model_side import ModelSide
from coordinator.conformance.side_view import View, remember
from coordinator.conformance.step_requests import LONG_MS, StepRequests
from coordinator.conformance.steps import (
    CONSUMER_GROUP,
    GROUPS,
    REGEX_KIND,
    SLOTS,
    Beat,
    Describe,
    Fetch,
    Join,
    Step,
    Sync,
    Wait,
    group_of,
)
from coordinator.wire.api_keys import ApiKey
from rebalance import commands
from rebalance.classic.replies import JoinGroupReply
from rebalance.replies import DescribeGroupsReply

#: How long the broker may take to give an answer the model gave (beyond the initial delay).
ANSWER_TIMEOUT_S = 5.0
#: How long a request the model parks is given to reach the broker before the next step.
PARKED_SETTLE_S = 0.002


class Divergence(AssertionError):
    """The broker answered differently from the model."""


class StepNotPossible(ValueError):
    """A replayed step that cannot be sent: its connection waits for a parked answer, or the
    broker cannot take KIP-848 steps."""


@dataclass
class InFlight:
    number: int
    step: Step
    model_token: int
    broker_task: asyncio.Task[object]


class Lockstep:
    """Drives one run; `apply` each step, then `finish`."""

    def __init__(
        self,
        model: ModelSide,
        broker: BrokerSide,
        group_ids: dict[str, str],
        topic: str,
        versions: dict[int, int],
        topic_names: Mapping[str, str] = {},
        timeouts_ms: tuple[int, int] | None = None,
        regex: str | None = None,
    ) -> None:
        """`timeouts_ms`: (session, rebalance) timeout of every join (a KIP-848 member's
        rebalance timeout: its session is the broker's `group.consumer.session.timeout.ms`),
        and time passes in `wait` steps (a timed run); None: ten minutes each, and time stands
        still. `regex`: the pattern `beat cN regex` subscribes with (matching `topic`), or None
        where the broker does not resolve regexes as the model does (the step is refused)."""
        self.model = model
        self.broker = broker
        self.group_ids = group_ids
        self.topic = topic
        self.versions = versions
        self.views = {"model": View(), "broker": View()}
        self.in_flight: list[InFlight] = []
        self.log: list[str] = []
        #: The steps applied so far, as text: the replay command a divergence prints.
        self.applied: list[str] = []
        self.steps = 0
        #: Leaders the model took over from the broker (Kafka's choice was free).
        self.adoptions = 0
        delay_s = model.config.group_initial_rebalance_delay_ms / 1000
        self.answer_timeout_s = ANSWER_TIMEOUT_S + delay_s
        self._current: Step | None = None
        session_ms, rebalance_ms = timeouts_ms or (LONG_MS, LONG_MS)
        self.requests = StepRequests(group_ids, topic, versions, session_ms, rebalance_ms, regex)
        self.answers = Normaliser(self.requests.labels, dict(topic_names))
        self.timed = timeouts_ms is not None
        self.regex = regex
        # The timing guard runs in every run: where time stands still, the only deadlines near
        # enough to matter are KIP-848 sessions (the broker's setting, not the run's), short on
        # a broker set up for timed runs; a run that lasts that long is inconclusive.
        self.clock = model.timed()
        #: Real time waited in `wait` steps (ms).
        self.waited_ms = 0
        # KIP-848 member ids are the client's (ConsumerGroupHeartbeat v1): the same on both sides.
        group = group_ids.get(CONSUMER_GROUP)
        for slot, member_id in consumer_member_ids(group).items() if group else ():
            for view in self.views.values():
                view.ids[slot] = member_id
                view.names[member_id] = slot

    def busy(self, slot: str) -> bool:
        """The slot's JoinGroup or SyncGroup is parked: its connection waits for the answer."""
        return any(_slot_of(f.step) == slot for f in self.in_flight)

    def idle_slots(self) -> list[str]:
        return [s for s in SLOTS if not self.busy(s)]

    def with_ids(self) -> list[str]:
        """Slots the broker has handed a member id (their requests reach a member)."""
        return [s for s in SLOTS if self.views["broker"].ids[s]]

    async def apply(self, step: Step) -> None:
        self._check_early_answers()
        self._current = step
        self.applied.append(str(step))
        if isinstance(step, Wait):
            await self._wait(step)
            return
        if _group(step) not in self.group_ids:
            raise StepNotPossible(
                f"step {self.steps + 1} ({step}): KIP-848 steps need ConsumerGroupHeartbeat v1 "
                "and group.consumer.assignment.interval.ms 0 or absent (timed: and "
                "group.consumer.session.timeout.ms <= 900)"
            )
        if isinstance(step, Beat) and step.kind == REGEX_KIND and self.regex is None:
            raise StepNotPossible(
                f"step {self.steps + 1} ({step}): the broker resolves a new regex in the "
                "background (Kafka 4.x), not at once as the model does: see docs/conformance.md"
            )
        if step == Describe(CONSUMER_GROUP) and ApiKey.CONSUMER_GROUP_DESCRIBE not in self.versions:
            raise StepNotPossible(
                f"step {self.steps + 1} ({step}): the broker has no ConsumerGroupDescribe"
            )
        if isinstance(step, Join | Sync) and self.busy(step.slot):
            raise StepNotPossible(
                f"step {self.steps + 1} ({step}): the slot's connection waits for an answer"
            )
        self.steps += 1
        model_command = self.requests.command(step, self.views["model"])
        broker_command = self.requests.command(step, self.views["broker"])
        connection = step.slot if isinstance(step, Join | Sync) else f"admin-{_group(step)}"
        token = self.model.send(model_command)
        task = await self.broker.send(connection, broker_command)
        self.in_flight.append(InFlight(self.steps, step, token, task))
        if self.model.answer(token) is None:
            # Parked: let the broker take it in before the next step's request, which another
            # connection carries (nothing orders requests across connections).
            await asyncio.sleep(PARKED_SETTLE_S)
        replies = await self._answered()
        self.clock.check(f"step {self.steps} ({step})")
        for group_id in sorted(self.model.timed_groups):
            await self._await_timer(group_id)
        self._compare(step, replies)

    async def _wait(self, step: Wait) -> None:
        """Let time pass on both sides (see `coordinator.conformance.timing`), then compare the
        answers the model's timers released, both classic groups as DescribeGroups shows them
        and the KIP-848 group as ConsumerGroupDescribe does (where the broker has them)."""
        if not self.timed:
            raise StepNotPossible(f"step {self.steps + 1} ({step}): time stands still in this run")
        self.steps += 1
        waited = self.model.wait(step.ms)
        self.waited_ms += waited
        await asyncio.sleep(waited / 1000)
        self.clock.check(f"step {self.steps} ({step}, {waited} ms)")
        replies = await self._answered()
        described = [
            g for g in GROUPS if g in self.group_ids and ApiKey.DESCRIBE_GROUPS in self.versions
        ]
        if CONSUMER_GROUP in self.group_ids and ApiKey.CONSUMER_GROUP_DESCRIBE in self.versions:
            described.append(CONSUMER_GROUP)  # KIP-848: sessions and revocations expired
        for group in described:
            describe = Describe(group)
            token = self.model.send(self.requests.command(describe, self.views["model"]))
            command = self.requests.command(describe, self.views["broker"])
            task = await self.broker.send(f"admin-{group}", command)
            model_reply = self.model.answer(token)
            assert model_reply is not None
            broker_reply = await asyncio.wait_for(task, self.answer_timeout_s)
            replies.append((InFlight(self.steps, describe, token, task), model_reply,
                            broker_reply))  # fmt: skip
        self._compare(step, replies, f"waited {waited} ms")

    async def _answered(self) -> list[tuple[InFlight, object, object]]:
        """The requests in flight the model has answered, with the broker's answers."""
        answered = [f for f in self.in_flight if self.model.answer(f.model_token) is not None]
        self.in_flight = [f for f in self.in_flight if f not in answered]
        replies: list[tuple[InFlight, object, object]] = []
        for f in answered:
            model_reply = self.model.answer(f.model_token)
            assert model_reply is not None
            try:
                broker_reply = await asyncio.wait_for(f.broker_task, self.answer_timeout_s)
            except TimeoutError:
                self._diverge(
                    f, self.answers.normalise(model_reply, self.views["model"]),
                    {"answer": f"none within {self.answer_timeout_s:.0f} s"},
                )  # fmt: skip
            replies.append((f, model_reply, broker_reply))
        return replies

    async def _await_timer(self, group_id: str) -> None:
        """A timer the model fired at once changed `group_id`: wait (a while) for the broker's
        own timer to fire, seen as DescribeGroups showing the state the model's left. The
        answers are compared afterwards as usual; a broker that never gets there shows then."""
        if ApiKey.DESCRIBE_GROUPS not in self.versions or group_id not in self.group_ids.values():
            return
        describe = commands.DescribeGroups((group_id,))
        token = self.model.send(describe)
        model_answer = self.model.answer(token)
        assert isinstance(model_answer, DescribeGroupsReply)
        wanted = model_answer.groups[0].state
        group = next(g for g, i in self.group_ids.items() if i == group_id)
        deadline = asyncio.get_running_loop().time() + self.answer_timeout_s
        while asyncio.get_running_loop().time() < deadline:
            task = await self.broker.send(f"admin-{group}", describe)
            seen = await asyncio.wait_for(task, self.answer_timeout_s)
            assert isinstance(seen, DescribeGroupsReply)
            if seen.groups[0].state == wanted:
                return
            await asyncio.sleep(PARKED_SETTLE_S)

    async def finish(self) -> None:
        """Let answers in transit arrive, then check none came for a request the model holds."""
        for _ in range(3):
            await asyncio.sleep(0)
        self._check_early_answers()

    # -- comparing answers -------------------------------------------------------------------
    def _compare(
        self, step: Step, replies: list[tuple[InFlight, object, object]], note: str = ""
    ) -> None:
        model_view, broker_view = self.views["model"], self.views["broker"]
        for f, model_reply, broker_reply in replies:  # ids handed out first: names for both
            if isinstance(f.step, Join):
                assert isinstance(model_reply, JoinGroupReply)
                assert isinstance(broker_reply, JoinGroupReply)
                slot = f.step.slot
                model_view.bind(slot, model_reply.member_id)
                broker_view.bind(slot, broker_reply.member_id)
        adopted = self._adopt_leaders(replies)
        lines = [note] if note else []
        for f, model_reply, broker_reply in replies:
            model_answer = self.answers.normalise(model_reply, model_view)
            broker_answer = self.answers.normalise(broker_reply, broker_view)
            group = _group(f.step)
            if group in adopted and isinstance(model_reply, JoinGroupReply):
                leader, members = adopted[group]
                model_answer["leader"] = leader
                model_answer["members"] = members if model_answer["member"] == leader else ""
            if model_answer != broker_answer:
                self._diverge(f, model_answer, broker_answer)
            for side, reply in (("model", model_reply), ("broker", broker_reply)):
                remember(f.step, reply, self.views[side])
            if group in adopted:
                model_view.leader[group] = adopted[group][0]
            prefix = (
                "" if f.step == step
                else f"{f.step}: " if f.number == self.steps
                else f"{f.step} (step {f.number}) "
            )  # fmt: skip
            note = f"  [leader {adopted[group][0]} adopted]" if group in adopted else ""
            lines.append(prefix + text(broker_answer) + note)
        self.log.append(f"{self.steps:4}. {step!s:<36} -> " + ("; ".join(lines) or "(parked)"))

    def _adopt_leaders(
        self, replies: list[tuple[InFlight, object, object]]
    ) -> dict[str, tuple[str, str]]:
        """Groups whose new leader the broker chose where Kafka's choice is free: the leader's
        name and the generation's member list as the model told it."""
        adopted: dict[str, tuple[str, str]] = {}
        model_view, broker_view = self.views["model"], self.views["broker"]
        for f, model_reply, broker_reply in replies:
            if not (
                isinstance(model_reply, JoinGroupReply)
                and isinstance(broker_reply, JoinGroupReply)
                and model_reply.error.name == broker_reply.error.name == "NONE"
            ):
                continue
            group = _group(f.step)
            group_id = self.group_ids[group]
            chosen = broker_view.name(broker_reply.leader)
            free = group_id in self.model.reelected
            if chosen == model_view.name(model_reply.leader) or not free:
                continue
            model_group = self.model.group(group_id)
            names = {model_view.name(m) for m in model_group.members} if model_group else set()
            if chosen not in names:
                continue
            members = next(
                (
                    self.answers.members_text(r.members, model_view)
                    for g, r, _ in replies
                    if isinstance(r, JoinGroupReply) and r.members and _group(g.step) == group
                ),
                "",
            )
            self.model.adopt_leader(group_id, model_view.id_of(chosen))
            adopted[group] = (chosen, members)
            self.adoptions += 1
        return adopted

    def _check_early_answers(self) -> None:
        for f in self.in_flight:
            if f.broker_task.done() and self.model.answer(f.model_token) is None:
                try:
                    reply = f.broker_task.result()
                except (OSError, asyncio.IncompleteReadError) as exc:
                    raise Divergence(f"the connection of step {f.number} failed: {exc!r}") from None
                self._diverge(
                    f, {"answer": "none yet (parked)"},
                    self.answers.normalise(reply, self.views["broker"]),
                )  # fmt: skip

    def replay_command(self) -> str:
        """The command line that runs this run's steps again against the same broker."""
        address = f"{self.broker.broker.host}:{self.broker.broker.port}"
        steps = shlex.quote("; ".join(self.applied))
        return f"rebalance conformance --bootstrap {address} --replay {steps}"

    def _diverge(self, f: InFlight, model: Answer, broker: Answer) -> None:
        raise Divergence(
            f"the broker and the model differ at step {f.number} ({f.step}):\n"
            f"  model:  {text(model)}\n"
            f"  broker: {text(broker)}\n"
            f"the run until then (replay: {self.replay_command()}):\n"
            + "\n".join(self.log)
            + f"\n{self.steps:4}. {self._current}   <- diverged here"
        )


def _slot_of(step: Step) -> str | None:
    return step.slot if isinstance(step, Join | Sync) else None


def _group(step: Step) -> str:
    if isinstance(step, Wait):
        return ""
    return step.group if isinstance(step, Fetch | Describe) else group_of(step.slot)
