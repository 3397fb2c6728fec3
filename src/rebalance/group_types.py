"""What the core asks of a group type: the room each kind of group lives in.

Kafka's group coordinator holds classic and consumer (KIP-848) groups side by side, a group id
belonging to one type at a time. So does this core: `CoordinatorState.groups` maps each id to
one group object, and the group's `group_type` names the `GroupType` that owns it. What every
type shares is written once, in the core: coordinator placement and partition loading, offsets
and their commit fencing, timer bookkeeping (stale firings dropped), records and replay, and
DescribeGroups / ListGroups / DeleteGroups, which ask the type only for its view of a group.

To add a group type: a package beside `rebalance.classic` with its group class (a `group_type`
class attribute, `group_id`, `partition`, `state`, `offsets`), its record class (with `group_id`
and `value`, None a tombstone), its timer kinds, and a class satisfying this protocol; register
it in `GroupCoordinatorCore.__init__`, and route its commands in the core's dispatch table.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from rebalance.effects import Result
from rebalance.errors import ErrorCode
from rebalance.records import Record
from rebalance.replies import DescribedGroup, ListedGroup
from rebalance.timers import TimerKey


class GroupType(Protocol):
    """One kind of group. Its `group` arguments are instances of its `group_class`."""

    name: ClassVar[str]
    group_class: ClassVar[type[Any]]
    record_class: ClassVar[type[Any]]
    timer_kinds: ClassVar[frozenset[str]]

    def on_timer(self, key: TimerKey, group: Any, now_ms: int) -> Result:
        """One of this type's timers fired for `group` (stale firings are already dropped)."""
        ...

    def loaded(self, result: Result, group: Any, now_ms: int) -> None:
        """The group's partition finished loading: arm what a live group needs."""
        ...

    def unloaded(self, result: Result, group: Any) -> None:
        """The group's partition moved away: answer anything parked with NOT_COORDINATOR."""
        ...

    def replay(self, group: Any, value: Any) -> None:
        """Apply one of this type's record values (not a tombstone) to `group`."""
        ...

    def tombstones(self, group: Any) -> list[Record]:
        """The records that delete `group` (DeleteGroups; an empty group whose offsets
        expired), its offsets aside."""
        ...

    def describe(self, group: Any) -> DescribedGroup: ...

    def listed(self, group: Any) -> ListedGroup: ...

    def deletable(self, group: Any) -> ErrorCode:
        """NONE if DeleteGroups may delete `group` now, else the error it answers."""
        ...
