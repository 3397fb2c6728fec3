"""Every (state, trigger) pair of the group lifecycle, legal and illegal.

The expected table is written out here by hand from the spec (§1.3 legal transitions, mapped to
the seed's five states), not derived from `lifecycle.TRANSITIONS`, so a change to the table that
the spec does not allow fails this test. Illegal pairs must raise and leave the state unchanged.
"""

from __future__ import annotations

import itertools

import pytest

from rebalance.errors import IllegalTransition
from rebalance.lifecycle import TRIGGERS, GroupState, allowed, fire, kafka_state_name

D, INIT, S, J, A = (
    GroupState.DOWN,
    GroupState.INITIALIZE,
    GroupState.STABLE,
    GroupState.JOINING,
    GroupState.AWAITING_SYNC,
)

# (state, trigger, has_members) -> destination; anything absent must be rejected.
EXPECTED: dict[tuple[GroupState, str, bool], GroupState] = {
    # Down -> Initialize -> Stable: loading a partition (or setting up a new group).
    (D, "load", False): INIT,
    (D, "load", True): INIT,
    (INIT, "loaded", False): S,
    (INIT, "loaded", True): S,
    # PreparingRebalance <- Stable, CompletingRebalance, Empty (spec §1.3).
    (S, "begin_rebalance", False): J,
    (S, "begin_rebalance", True): J,
    (A, "begin_rebalance", False): J,
    (A, "begin_rebalance", True): J,
    # CompletingRebalance <- PreparingRebalance, with members; Empty <- PreparingRebalance.
    (J, "complete_join", True): A,
    (J, "empty_out", False): S,
    # Stable <- CompletingRebalance.
    (A, "complete_sync", False): S,
    (A, "complete_sync", True): S,
    # Dead <- every live state (partition unloaded).
    **{(s, "unload", m): D for s in (INIT, S, J, A) for m in (False, True)},
    # Dead <- Empty (DeleteGroups, or expiry of an empty group).
    (S, "delete", False): D,
}


class Model:
    def __init__(self, state: GroupState, members: bool) -> None:
        self.state = state
        self.members = members

    def has_members(self) -> bool:
        return self.members

    def is_empty(self) -> bool:
        return not self.members


CASES = list(itertools.product(GroupState, TRIGGERS, (False, True)))


def test_the_table_names_exactly_the_spec_triggers() -> None:
    assert set(TRIGGERS) == {
        "load",
        "loaded",
        "begin_rebalance",
        "complete_join",
        "empty_out",
        "complete_sync",
        "unload",
        "delete",
    }


@pytest.mark.parametrize(
    ("state", "trigger", "members"),
    CASES,
    ids=[f"{s.name}-{t}-{'members' if m else 'empty'}" for s, t, m in CASES],
)
def test_state_trigger_pair(state: GroupState, trigger: str, members: bool) -> None:
    model = Model(state, members)
    expected = EXPECTED.get((state, trigger, members))
    if expected is None:
        with pytest.raises(IllegalTransition):
            fire(model, trigger)
        assert model.state is state, "a rejected trigger must not change the state"
    else:
        assert fire(model, trigger) is expected
        assert model.state is expected


def test_allowed_ignores_guards_but_not_sources() -> None:
    assert allowed(J, "complete_join")
    assert allowed(J, "empty_out")
    assert not allowed(S, "complete_join")
    assert not allowed(D, "begin_rebalance")


@pytest.mark.parametrize(
    ("state", "members", "name"),
    [
        (S, False, "Empty"),
        (S, True, "Stable"),
        (J, True, "PreparingRebalance"),
        (J, False, "PreparingRebalance"),
        (A, True, "CompletingRebalance"),
        (D, False, "Dead"),
    ],
)
def test_kafka_wire_names(state: GroupState, members: bool, name: str) -> None:
    assert kafka_state_name(state, members) == name
