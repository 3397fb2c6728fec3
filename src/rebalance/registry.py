"""The group types a core holds by default: the one place a group type is registered.

Each entry builds its type over the core's `CoordinatorState`; its routes join the core's
dispatch, its record class the replay, its timer kinds the timer dispatch. The first is the
type of a group an offset record creates alone (Kafka's "simple" group): classic.
"""

from __future__ import annotations

from collections.abc import Callable

from rebalance.classic import ClassicGroupType
from rebalance.client_balance.group_type import ClientBalanceGroupType
from rebalance.consumer_group.group_type import ConsumerGroupType
from rebalance.group_types import GroupType
from rebalance.state import CoordinatorState

#: Builds a group type over the core's state.
GroupTypeFactory = Callable[[CoordinatorState], GroupType]

GROUP_TYPES: tuple[GroupTypeFactory, ...] = (
    ClassicGroupType,
    ConsumerGroupType,
    ClientBalanceGroupType,
)
