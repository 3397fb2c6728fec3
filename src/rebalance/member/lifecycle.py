"""The member's lifecycle: one declarative table, like the group's (`rebalance.lifecycle`).

Rules / theory of operation
---------------------------
* A member lives through: UNJOINED (no generation: new, or reset by an error) -> JOINING (a
  JoinGroup, or for the consumer protocol a joining heartbeat, is due or in flight) -> SYNCING
  (classic: the JoinGroup answered, the SyncGroup due or in flight) -> STABLE (an assignment is
  held and heartbeats keep it) -> back to JOINING for the next rebalance. LEAVING sends the
  LeaveGroup (or the epoch -1 heartbeat); LEFT and FAILED are final.
* Whether the coordinator is known is not a state of this table: it is orthogonal (a member in
  any live state may have to find the coordinator again), as in Kafka's AbstractCoordinator.
* Everything that changes a member's state is a trigger here; the member calls `fire`, which
  looks the (state, trigger) pair up and moves it or raises `IllegalTransition`. The table is
  handed to `transitions.Machine`, which validates it, and is flattened into a dict once.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final, Protocol

from transitions import Machine

from rebalance.errors import IllegalTransition


class MemberState(Enum):
    UNJOINED = "Unjoined"
    JOINING = "Joining"
    SYNCING = "Syncing"
    STABLE = "Stable"
    LEAVING = "Leaving"
    LEFT = "Left"
    FAILED = "Failed"


class HasMemberState(Protocol):
    state: MemberState


_LIVE = [MemberState.UNJOINED, MemberState.JOINING, MemberState.SYNCING, MemberState.STABLE]

#: The member's lifecycle, in the order a member lives through it.
TRANSITIONS: Final[list[dict[str, Any]]] = [
    # A JoinGroup is due: first join, a rebalance, a retry after MEMBER_ID_REQUIRED or
    # REBALANCE_IN_PROGRESS, or a rejoin after a reset.
    {
        "trigger": "join",
        "source": [
            MemberState.UNJOINED,
            MemberState.JOINING,
            MemberState.SYNCING,
            MemberState.STABLE,
        ],
        "dest": MemberState.JOINING,
    },
    # The JoinGroup was answered with a generation: the SyncGroup is next (classic only).
    {"trigger": "joined", "source": MemberState.JOINING, "dest": MemberState.SYNCING},
    # The assignment arrived (classic SyncGroup; consumer protocol: the member epoch is current).
    {
        "trigger": "synced",
        "source": [MemberState.SYNCING, MemberState.JOINING, MemberState.STABLE],
        "dest": MemberState.STABLE,
    },
    # The generation (and maybe the member id) is gone: fenced, unknown, session lost.
    {"trigger": "reset", "source": _LIVE, "dest": MemberState.UNJOINED},
    # close(): the leave request is due.
    {"trigger": "leave", "source": _LIVE, "dest": MemberState.LEAVING},
    {"trigger": "left", "source": MemberState.LEAVING, "dest": MemberState.LEFT},
    # An error Kafka's client does not recover from (fenced instance id, bad configuration).
    {"trigger": "fail", "source": [*_LIVE, MemberState.LEAVING], "dest": MemberState.FAILED},
]

_MACHINE: Final = Machine(
    model=None,
    states=MemberState,
    transitions=TRANSITIONS,
    initial=None,
    auto_transitions=False,
    ignore_invalid_triggers=False,
)

TRIGGERS: Final[tuple[str, ...]] = tuple(_MACHINE.events)

_EDGES: Final[dict[tuple[MemberState, str], MemberState]] = {
    (MemberState[source], trigger): MemberState[str(edges[0].dest)]
    for trigger, event in _MACHINE.events.items()
    for source, edges in event.transitions.items()
}


def allowed(state: MemberState, trigger: str) -> bool:
    """Whether the table has an edge for `trigger` out of `state`."""
    return (state, trigger) in _EDGES


def fire(member: HasMemberState, trigger: str) -> MemberState:
    """Move `member` along `trigger`, or raise `IllegalTransition` leaving it unchanged."""
    dest = _EDGES.get((member.state, trigger))
    if dest is None:
        raise IllegalTransition(f"member: {trigger!r} is not allowed in state {member.state.name}")
    member.state = dest
    return dest
