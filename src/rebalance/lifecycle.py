"""The group lifecycle: one declarative table, read top to bottom like the spec.

Rules / theory of operation
---------------------------
* A group moves through five states: DOWN (not loaded here, or deleted) -> INITIALIZE (its
  `__consumer_offsets` partition is being loaded, or a brand-new group is being set up) ->
  STABLE (generation formed and assignment handed out; or no members at all, which Kafka shows as
  "Empty") -> JOINING (Kafka's PreparingRebalance: waiting for members to rejoin) ->
  AWAITING_SYNC (Kafka's CompletingRebalance: generation formed, waiting for the leader's
  assignment) -> STABLE.
* Everything that changes a group's state is a trigger in `TRANSITIONS`. Handlers never assign
  `group.state`; they call `fire(group, trigger)`, which looks the (state, trigger) pair up in the
  table, evaluates its guard conditions (pure predicates on the group) and either moves the group
  or raises `IllegalTransition` with the state untouched.
* The table is declared once and handed to `transitions.Machine`, which validates it (unknown
  states, duplicate triggers) and is the source of the lookup dict. Groups are *not* attached to
  the machine as models: `Machine.add_model` scans a list (O(n) per group) and binds partials per
  model (RESULTS.md: figures behind the code), while a coordinator holds 100k groups. The
  machine's compiled events are flattened once into `(state, trigger) -> [(dest, guards)]`, so a
  transition costs one dict lookup and the per-group cost is one enum attribute.
* Callbacks do nothing here: the handler that fires a trigger also produces the effects (replies,
  timers, records). Keeping effects out of callbacks keeps them visible in one place.

Kafka's legal transitions (`ClassicGroupState`) map onto the table: Empty <- PreparingRebalance
is `empty_out`; PreparingRebalance <- Stable/CompletingRebalance/Empty is `begin_rebalance`;
CompletingRebalance <- PreparingRebalance is `complete_join`; Stable <- CompletingRebalance is
`complete_sync`; Dead <- any is `unload` / `delete`.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar, Final, Protocol

from transitions import Machine

from rebalance.errors import IllegalTransition


class GroupState(Enum):
    """The seed design's state names; `kafka_state_name` gives the wire names."""

    DOWN = "Down"
    INITIALIZE = "Initialize"
    STABLE = "Stable"
    JOINING = "Joining"
    AWAITING_SYNC = "AwaitingSync"


class Stateful(Protocol):
    """What the lifecycle needs from a group: a state and the guard predicates."""

    state: GroupState

    def has_members(self) -> bool: ...

    def is_empty(self) -> bool: ...


_ALL_LIVE = [GroupState.INITIALIZE, GroupState.STABLE, GroupState.JOINING, GroupState.AWAITING_SYNC]

#: The lifecycle, in the order a group lives through it.
TRANSITIONS: Final[list[dict[str, Any]]] = [
    # Loading: a partition is being read back (or a new group is being set up).
    {"trigger": "load", "source": GroupState.DOWN, "dest": GroupState.INITIALIZE},
    {"trigger": "loaded", "source": GroupState.INITIALIZE, "dest": GroupState.STABLE},
    # A rebalance starts: from Stable (with or without members) or an unfinished sync.
    {
        "trigger": "begin_rebalance",
        "source": [GroupState.STABLE, GroupState.AWAITING_SYNC],
        "dest": GroupState.JOINING,
    },
    # The join phase ends: a new generation with members waits for the leader's assignment ...
    {
        "trigger": "complete_join",
        "source": GroupState.JOINING,
        "dest": GroupState.AWAITING_SYNC,
        "conditions": "has_members",
    },
    # ... or nobody is left and the group is Empty (the generation still advances).
    {
        "trigger": "empty_out",
        "source": GroupState.JOINING,
        "dest": GroupState.STABLE,
        "conditions": "is_empty",
    },
    # The leader's assignment is durable and handed out.
    {"trigger": "complete_sync", "source": GroupState.AWAITING_SYNC, "dest": GroupState.STABLE},
    # The partition moves away (Kafka: Dead), or an empty group is deleted or expires.
    {"trigger": "unload", "source": _ALL_LIVE, "dest": GroupState.DOWN},
    {
        "trigger": "delete",
        "source": GroupState.STABLE,
        "dest": GroupState.DOWN,
        "conditions": "is_empty",
    },
]

_MACHINE: Final = Machine(
    model=None,
    states=GroupState,
    transitions=TRANSITIONS,
    initial=None,
    auto_transitions=False,
    ignore_invalid_triggers=False,
)

TRIGGERS: Final[tuple[str, ...]] = tuple(_MACHINE.events)

_Edge = tuple[GroupState, tuple[str, ...]]


def _compile() -> dict[tuple[GroupState, str], tuple[_Edge, ...]]:
    table: dict[tuple[GroupState, str], tuple[_Edge, ...]] = {}
    for trigger, event in _MACHINE.events.items():
        for source_name, edges in event.transitions.items():
            source = GroupState[source_name]
            table[(source, trigger)] = tuple(
                (GroupState[str(edge.dest)], tuple(str(c.func) for c in edge.conditions))
                for edge in edges
            )
    return table


_EDGES: Final = _compile()


def allowed(state: GroupState, trigger: str) -> bool:
    """Whether the table has an edge for `trigger` out of `state` (guards not evaluated)."""
    return (state, trigger) in _EDGES


def fire(group: Stateful, trigger: str) -> GroupState:
    """Move `group` along `trigger`, or raise `IllegalTransition` leaving it unchanged."""
    edges = _EDGES.get((group.state, trigger))
    if edges is None:
        raise IllegalTransition(f"{trigger!r} is not allowed in state {group.state.name}")
    for dest, guards in edges:
        if all(getattr(group, guard)() for guard in guards):
            group.state = dest
            return dest
    raise IllegalTransition(
        f"{trigger!r} from {group.state.name}: guard {edges[0][1]} does not hold"
    )


def kafka_state_name(state: GroupState, has_members: bool) -> str:
    """The state as DescribeGroups/ListGroups show it (Kafka's `ClassicGroupState` names)."""
    if state is GroupState.STABLE:
        return "Stable" if has_members else "Empty"
    if state is GroupState.JOINING:
        return "PreparingRebalance"
    if state is GroupState.AWAITING_SYNC:
        return "CompletingRebalance"
    if state is GroupState.INITIALIZE:
        return "Loading"  # never shown on the wire: requests get COORDINATOR_LOAD_IN_PROGRESS
    return "Dead"


class LoadedOnlyLifecycle:
    """The lifecycle of the group types without a join round (KIP-848 consumer groups and
    client-balance groups): the group is loaded, lives, and is unloaded or deleted. Their members
    come and go by heartbeat, so there is no group-wide rebalance state; what ListGroups shows is
    derived from the members, not from `state`."""

    __slots__ = ("current_state_timestamp_ms", "state")

    state: GroupState
    current_state_timestamp_ms: int | None

    _EDGES: ClassVar[dict[tuple[str, GroupState], GroupState]] = {
        ("load", GroupState.DOWN): GroupState.INITIALIZE,
        ("loaded", GroupState.INITIALIZE): GroupState.STABLE,
        ("unload", GroupState.INITIALIZE): GroupState.DOWN,
        ("unload", GroupState.STABLE): GroupState.DOWN,
        ("delete", GroupState.STABLE): GroupState.DOWN,
    }

    def transition(self, trigger: str, now_ms: int | None) -> None:
        """Move along `trigger` (the same names as `TRANSITIONS`), or raise `ValueError`."""
        dest = self._EDGES.get((trigger, self.state))
        if dest is None:
            raise ValueError(f"{trigger!r} is not allowed in state {self.state.name}")
        self.state = dest
        if now_ms is not None:
            self.current_state_timestamp_ms = now_ms
