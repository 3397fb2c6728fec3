"""Pure members wired to the pure coordinator: the member's requests are the core's commands.

`Cluster` owns a `GroupHarness` (the coordinator core on a manual clock) and any number of
`ClassicMember`s. `step()` lets every member send what it wants, answers what the core answered
(parked requests are answered later, when the core releases them), and carries out callbacks at
once; `run(ms)` advances time event by event (member wake-ups and coordinator timers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rebalance.commands import OffsetCommit
from rebalance.config import CoordinatorConfig
from rebalance.errors import ErrorCode
from rebalance.member import (
    Assigned,
    Change,
    ClassicMember,
    ConsumerEmbedded,
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    MemberConfig,
    Revoked,
    TopicsDescribed,
)
from rebalance.member.classic_membership import Request
from rebalance.replies import OffsetCommitReply
from rebalance.testing import GroupHarness

FAST = CoordinatorConfig.from_properties(
    {
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "100",
        "group.consumer.min.session.timeout.ms": "100",
        "group.consumer.session.timeout.ms": "3000",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "1000",
    }
)


@dataclass
class Wired:
    """One member and the token of its request parked at the coordinator."""

    member: ClassicMember
    token: int | None = None
    log: list[Change] = field(default_factory=list)


class Cluster:
    def __init__(
        self, partitions: Mapping[str, int], config: CoordinatorConfig = FAST, seed: int = 0
    ) -> None:
        self.harness = GroupHarness(config, seed=seed)
        self.partitions = dict(partitions)
        self.members: dict[str, Wired] = {}
        self.on_change: Callable[[str, Change], None] | None = None

    @property
    def now(self) -> int:
        return self.harness.clock.now_ms()

    def add(
        self,
        name: str,
        *,
        group: str = "g",
        assignors: tuple[str, ...] = ("cooperative-sticky",),
        topics: tuple[str, ...] | None = None,
        **settings: Any,
    ) -> ClassicMember:
        options: dict[str, Any] = {
            "session_timeout_ms": 3000,
            "heartbeat_interval_ms": 1000,
            "rebalance_timeout_ms": 5000,
            "client_id": name,
        }
        options |= settings
        protocol = options.pop("protocol", None) or ConsumerEmbedded(
            tuple(topics or sorted(self.partitions)), assignors
        )
        member = ClassicMember(MemberConfig(group, **options), protocol)
        self.members[name] = Wired(member)
        return member

    def answer(self, request: Request) -> Any:
        """The reply the coordinator gives at once, or an int token when it parks the request."""
        if isinstance(request, FindCoordinator):
            return FindCoordinatorReply(ErrorCode.NONE, 0, "coordinator", 9092)
        if isinstance(request, DescribeTopics):
            return TopicsDescribed(
                {t: self.partitions[t] for t in request.topics if t in self.partitions}
            )
        token = self.harness.send(request)
        return self.harness.replies.get(token, token)

    def step(self) -> bool:
        """One round: deliver released replies, let every member send; True if anything moved."""
        moved = bool(self.harness.advance(0))  # timers due now (an initial delay of 0)
        for name, wired in self.members.items():
            member = wired.member
            if wired.token is not None and wired.token in self.harness.replies:
                reply = self.harness.replies[wired.token]
                wired.token = None
                member.on_reply(reply, self.now)
                moved = True
            moved |= self._callbacks(name, wired)
            request = member.poll(self.now)
            if request is None:
                moved |= self._callbacks(name, wired)
                continue
            moved = True
            reply = self.answer(request)
            if isinstance(reply, int):
                wired.token = reply
            else:
                member.on_reply(reply, self.now)
            self._callbacks(name, wired)
        return moved

    def _callbacks(self, name: str, wired: Wired) -> bool:
        changes = wired.member.take_changes()
        if changes:
            wired.log.extend(changes)
            for change in changes:
                if self.on_change is not None:
                    self.on_change(name, change)
            wired.member.changes_done()
        return bool(changes)

    def settle(self, limit: int = 200) -> None:
        for _ in range(limit):
            if not self.step():
                return
        raise AssertionError("members did not settle")

    def run(self, ms: int) -> None:
        """Advance `ms`, stopping at every member wake-up and coordinator timer on the way."""
        end = self.now + ms
        self.settle()
        while self.now < end:
            wakeups = [
                w
                for wired in self.members.values()
                if (w := wired.member.next_wakeup_ms(self.now)) is not None
            ]
            timer = self.harness.timer.next_deadline()
            nxt = min([end, *wakeups, *([timer] if timer is not None else [])])
            self.harness.advance(max(nxt - self.now, 0))
            self.settle()
            if nxt <= self.now and not wakeups and timer is None:
                break

    def commit(self, name: str, offsets: Mapping[tuple[str, int], int]) -> OffsetCommitReply:
        member = self.members[name].member
        request: OffsetCommit = member.commit(offsets)
        token = self.harness.send(request)
        reply = self.harness.replies[token]
        assert isinstance(reply, OffsetCommitReply)
        member.on_commit_reply(request, reply)
        return reply

    def owned(self) -> dict[str, frozenset[tuple[str, int]]]:
        return {name: w.member.owned for name, w in self.members.items()}


def kinds(log: list[Change]) -> list[str]:
    names = {Assigned: "assigned", Revoked: "revoked", Lost: "lost"}
    return [names[type(c)] for c in log]
