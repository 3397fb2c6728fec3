"""What the core asks of a group type: the room each kind of group lives in.

Kafka's group coordinator holds classic and consumer (KIP-848) groups side by side, a group id
belonging to one type at a time. So does this core: `CoordinatorState.groups` maps each id to
one group object, and the group's `group_type` names the `GroupType` that owns it. What every
type shares is written once, in the core: coordinator placement and partition loading, offsets
(`rebalance.offsets`), timer bookkeeping (stale firings dropped), records and replay, and
DescribeGroups / ListGroups / DeleteGroups, which ask the type only for its view of a group.

What differs per type is the type's, as Kafka's `Group` interface has it: the commands of its
own API (`routes`) and the ones of another type's API it answers for its groups
(`foreign_routes`: consumer groups answer classic JoinGroup, KIP-848 online migration), commit
and fetch validation (`validate_offset_commit` with its per-partition
`CommitPartitionValidator`, `validate_offset_fetch`), the topics its members consume
(`subscribed_topics`, Kafka's `isSubscribedToTopic`), its records and their tombstones, its
timers and its views.

To add a group type: a package beside `rebalance.classic` holding its group class (a
`group_type` class attribute, `group_id`, `partition`, `state`, `offsets`, `members`,
`empty`, `protocol_type`, `current_state_timestamp_ms`, `transition`), its record class (with
`group_id` and `value`, None a tombstone), its commands and replies, its timer kinds and a
class satisfying this protocol; list it in `rebalance.registry`, and give the store a codec
module for its records. Nothing shared changes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, ClassVar, Protocol

from rebalance.commands import Command, OffsetCommit, OffsetFetch
from rebalance.effects import Offload, Result
from rebalance.errors import ErrorCode
from rebalance.records import Record
from rebalance.replies import DescribedGroup, ListedGroup
from rebalance.timers import TimerKey
from rebalance.topics import TopicMetadata

#: Answers one command: `(command, now_ms, reply token)`.
Route = Callable[[Any, int, Hashable], Result]
#: Answers a command of another type's API naming one of this type's groups:
#: `(group, command, now_ms, reply token)`.
GroupRoute = Callable[[Any, Any, int, Hashable], Result]
#: Kafka's `CommitPartitionValidator`: NONE if the commit may write `(topic, partition)`, else
#: that partition's error; raising `CoordinatorError` refuses the whole commit (Kafka's throws).
CommitPartitionValidator = Callable[[str, int], ErrorCode]


class GroupType(Protocol):
    """One kind of group. Its `group` arguments are instances of its `group_class`.

    A type may subclass this protocol to take the defaults of the hooks most types leave alone
    (no foreign commands, every fetch answered, no topic metadata, nothing offloaded)."""

    name: ClassVar[str]
    group_class: ClassVar[type[Any]]
    record_class: ClassVar[type[Any]]
    timer_kinds: ClassVar[frozenset[str]]
    #: Whether this type's OffsetCommit events name it (`group_type`): classic ones do not.
    typed_commit_events: ClassVar[bool] = False

    # -- requests -------------------------------------------------------------------------
    def routes(self) -> Mapping[type[Command[Any]], Route]:
        """The commands of this type's own API and their handlers (the core's dispatch)."""
        ...

    def foreign_routes(self) -> Mapping[type[Command[Any]], GroupRoute]:
        """Commands of another type's API that this type answers when they name one of its
        groups; any other such command is that API's to answer (or refuse)."""
        return {}

    # -- offsets (Kafka's `Group.validateOffsetCommit`, `validateOffsetFetch`) ---------------
    def validate_offset_commit(
        self, result: Result, group: Any, cmd: OffsetCommit, now_ms: int
    ) -> CommitPartitionValidator | None:
        """Raise `CoordinatorError` with the commit's group-level error, else accept it
        (refreshing what a commit proves alive) and return its per-partition fence, if any."""
        ...

    def validate_offset_fetch(self, group: Any, cmd: OffsetFetch) -> None:
        """Raise `CoordinatorError` with the group-level error of an OffsetFetch."""
        return None

    def subscribed_topics(self, group: Any) -> set[str] | None:
        """The topics the members of a non-empty `group` consume (their offsets do not expire
        and OffsetDelete refuses them); None: unknown, every topic (Kafka's
        `isSubscribedToTopic`)."""
        ...

    # -- timers, partitions, topics -----------------------------------------------------------
    def on_timer(self, key: TimerKey, group: Any, now_ms: int) -> Result:
        """One of this type's timers fired for `group` (stale firings are already dropped)."""
        ...

    def loaded(self, result: Result, group: Any, now_ms: int) -> None:
        """The group's partition finished loading: arm what a live group needs."""
        ...

    def unloaded(self, result: Result, group: Any) -> None:
        """The group's partition moved away: answer anything parked with NOT_COORDINATOR."""
        ...

    def topics_changed(self, metadata: TopicMetadata, now_ms: int) -> Result:
        """The shell's new snapshot of the cluster's topics."""
        return Result()

    def offloaded_inputs(self) -> list[Offload]:
        """The work of this type's groups the shell would compute off the serial lane next."""
        return []

    def target_computed(self, group: Any, inputs: Offload, computed: Any, now_ms: int) -> Result:
        """Work offloaded for `group` is done (`computed`: None if it failed)."""
        return Result()

    # -- records --------------------------------------------------------------------------
    def replay(self, group: Any, value: Any) -> None:
        """Apply one of this type's record values (not a tombstone) to `group`."""
        ...

    def tombstones(self, group: Any) -> list[Record]:
        """The records that delete `group` (DeleteGroups; an empty group whose offsets
        expired), its offsets aside (Kafka's `createGroupTombstoneRecords`)."""
        ...

    # -- views ----------------------------------------------------------------------------
    def describe(self, group: Any) -> DescribedGroup: ...

    def listed(self, group: Any) -> ListedGroup: ...

    def deletable(self, group: Any) -> ErrorCode:
        """NONE if DeleteGroups may delete `group` now, else the error it answers."""
        ...
