"""What one side of a differential run has told it so far (`View`), and what a client keeps from
each answer (`remember`): member ids named by slot and incarnation, generations, leaders, member
lists, and a KIP-848 member's epoch and assignment. The run keeps one view per side, so that each
side's requests carry what that side answered and its answers are read in its own names."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.conformance.steps import (
    CONSUMER_SLOTS,
    SLOTS,
    Beat,
    Join,
    Leave,
    Step,
    group_of,
)
from rebalance.classic.replies import JoinGroupReply, LeaveGroupReply
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply


@dataclass
class View:
    """What one side has told the run so far: member ids by slot, generations, leaders."""

    ids: dict[str, str] = field(default_factory=lambda: dict.fromkeys(SLOTS, ""))  # + c0-c2
    names: dict[str, str] = field(default_factory=dict)
    incarnations: dict[str, int] = field(default_factory=dict)
    generation: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SLOTS, -1))
    leader: dict[str, str] = field(default_factory=dict)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    protocol: dict[str, str | None] = field(default_factory=dict)
    #: The first protocol each slot offered in its last JoinGroup.
    offered: dict[str, str] = field(default_factory=dict)
    #: KIP-848 members: epoch and the partitions last assigned (topic id, partitions).
    epoch: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CONSUMER_SLOTS, 0))
    owned: dict[str, tuple[tuple[str, tuple[int, ...]], ...]] = field(default_factory=dict)

    def name(self, member_id: str) -> str:
        if not member_id:
            return ""
        return self.names.get(member_id, "<unknown id>")

    def bind(self, slot: str, member_id: str) -> None:
        """A member id the broker just handed `slot`: a new incarnation of it."""
        if not member_id or member_id in self.names:
            return
        n = self.incarnations.get(slot, 0) + 1
        self.incarnations[slot] = n
        self.names[member_id] = slot if n == 1 else f"{slot}#{n}"
        self.ids[slot] = member_id

    def id_of(self, name: str) -> str:
        return next(i for i, n in self.names.items() if n == name)


def remember(step: Step, reply: object, view: View) -> None:
    """What a consumer keeps from an answer: its generation, the group's leader and
    members; and, as a consumer does, it forgets its member id once it has left or its
    join was refused as UNKNOWN_MEMBER_ID (`join a0 fresh` forgets it at any time)."""
    if isinstance(step, Join) and isinstance(reply, JoinGroupReply):
        slot, group = step.slot, group_of(step.slot)
        if reply.error.name == "UNKNOWN_MEMBER_ID":
            view.ids[slot] = ""
        if reply.error:
            return
        view.generation[slot] = reply.generation_id
        view.leader[group] = view.name(reply.leader)
        view.protocol[group] = reply.protocol_name
        if reply.members:
            view.members[group] = tuple(view.name(m.member_id) for m in reply.members)
    elif isinstance(step, Leave) and _left(reply):
        view.ids[step.slot] = ""
    elif isinstance(step, Beat) and isinstance(reply, ConsumerGroupHeartbeatReply):
        _remember_beat(step, reply, view)


def _remember_beat(step: Beat, reply: ConsumerGroupHeartbeatReply, view: View) -> None:
    """As a KIP-848 consumer does: keep the epoch and assignment it is given; after
    leaving, or when fenced or unknown, start again from epoch 0 owning nothing."""
    slot = step.slot
    if reply.error or step.kind == "leave":
        view.epoch[slot] = 0
        view.owned[slot] = ()
        return
    view.epoch[slot] = reply.member_epoch
    if reply.assignment is not None:
        view.owned[slot] = reply.assignment


def _left(reply: object) -> bool:
    """A LeaveGroup that removed its member."""
    if not isinstance(reply, LeaveGroupReply) or reply.error:
        return False
    return all(not m.error for m in reply.members)
