"""Replies go out only while this node may answer for their groups (cluster mode's serve rule).

A reply is checked against the node's `Ownership.may_answer` when the runtime hands it to the
connection, not when the core computed it: after a pause (SIGSTOP, then SIGCONT) the loop can run
the reads queued meanwhile before any timer noticed that the lease ran out, and a JoinGroup
completes without a write that the store could fence. A reply for a partition the node may no
longer answer for becomes the command's NOT_COORDINATOR reply (the client asks FindCoordinator
again) and the runtime resigns the partition. A single node (`SingleNodeOwnership`) has no gate:
its replies cost nothing more.

The other way round, a request for a partition the ownership says this node holds but the runtime
has not loaded (it resigned it at a lapsed deadline that a late renewal then extended, or the
announcement of its lease is still queued) makes the runtime take it over: the request itself is
answered as the core answers it (NOT_COORDINATOR), the client's retry finds the groups loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from coordinator.node.ownership import Ownership, SingleNodeOwnership
from rebalance.commands import Command
from rebalance.core import GroupCoordinatorCore
from rebalance.errors import ErrorCode

R = TypeVar("R")

#: Group ids whose partition the gate keeps (a group's partition never changes); past this many,
#: the others are computed each time.
_PLACED_MAX = 100_000


class ReplyGate:
    def __init__(
        self,
        ownership: Ownership,
        core: GroupCoordinatorCore,
        resign: Callable[[int], None],
        take_over: Callable[[int], None],
    ) -> None:
        self.may_answer = ownership.may_answer
        self._partition_for = core.partition_for
        self._owned = core.state.partitions  # (loading or live)
        self._resign = resign
        self._take_over = take_over
        self._placed: dict[str, int] = {}

    def checked(self, command: Command[R], response: R) -> R:
        """`response`, or `command`'s NOT_COORDINATOR reply (and its partition resigned) when
        this node may not answer for one of the command's groups now."""
        group_id = getattr(command, "group_id", None)
        # (ListGroups names no group: it lists those of the partitions this node holds.)
        group_ids = (group_id,) if group_id is not None else getattr(command, "group_ids", ())
        for name in group_ids:
            partition = self._placed.get(name)
            if partition is None:
                partition = self._partition_for(name)
                if len(self._placed) < _PLACED_MAX:
                    self._placed[name] = partition
            if not self.may_answer(partition):
                self._resign(partition)
                return command.error_reply(ErrorCode.NOT_COORDINATOR)
            if partition not in self._owned:
                self._take_over(partition)
        return response


def gate_for(
    ownership: Ownership | None,
    core: GroupCoordinatorCore,
    resign: Callable[[int], None],
    take_over: Callable[[int], None],
) -> ReplyGate | None:
    """The gate for `ownership`; None (no check at all) for a single node."""
    if ownership is None or isinstance(ownership, SingleNodeOwnership):
        return None
    return ReplyGate(ownership, core, resign, take_over)
