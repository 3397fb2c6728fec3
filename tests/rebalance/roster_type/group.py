"""A roster group: members and the epoch bumped whenever they change."""

from __future__ import annotations

from rebalance.lifecycle import GroupState, LoadedOnlyLifecycle
from rebalance.records import OffsetAndMetadata

GROUP_TYPE = "roster"


class RosterGroup(LoadedOnlyLifecycle):
    group_type = GROUP_TYPE
    protocol_type = GROUP_TYPE

    __slots__ = ("epoch", "group_id", "members", "offsets", "partition")

    def __init__(self, group_id: str, partition: int) -> None:
        self.group_id = group_id
        self.partition = partition
        self.state = GroupState.DOWN
        self.current_state_timestamp_ms: int | None = None
        self.epoch = 0
        self.members: dict[str, int] = {}  # member id -> session timeout ms
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}

    @property
    def empty(self) -> bool:
        return not self.members

    @property
    def kafka_state(self) -> str:
        return "Stable" if self.members else "Empty"
