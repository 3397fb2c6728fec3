"""The consumer group's API as the core routes it, and the classic requests it answers.

ConsumerGroupHeartbeat and ConsumerGroupDescribe are the type's own commands. A classic
JoinGroup, SyncGroup, Heartbeat or LeaveGroup naming a consumer group is the type's too
(`GroupType.foreign_routes`): its classic-protocol members take part in the group (KIP-848
online migration, `classic_requests`), and an empty consumer group becomes a classic group on a
JoinGroup without a member id.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from rebalance.classic import join
from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from rebalance.classic.group import Group
from rebalance.consumer_group import classic_requests, heartbeat
from rebalance.consumer_group.commands import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from rebalance.consumer_group.group import GROUP_TYPE, ConsumerGroup
from rebalance.consumer_group.replies import (
    ConsumerGroupDescribeReply,
    ConsumerGroupHeartbeatReply,
    DescribedConsumerGroup,
)
from rebalance.effects import Result, single_reply
from rebalance.errors import ErrorCode
from rebalance.state import CoordinatorState
from rebalance.topics import TopicMetadata

#: The types a consumer heartbeat may name: its own, and classic groups (an empty one is
#: converted, one with members upgraded online).
_CONVERTIBLE = (GROUP_TYPE, Group.group_type)


class _Owner(Protocol):
    """What the routes read of `ConsumerGroupType`: the state, the topic metadata it was last
    given, and its ConsumerGroupDescribe view."""

    @property
    def state(self) -> CoordinatorState: ...

    @property
    def metadata(self) -> TopicMetadata: ...

    def describe_consumer_group(self, group: ConsumerGroup) -> DescribedConsumerGroup: ...


class ConsumerRoutes:
    """The requests consumer groups answer; `metadata` is read through the owning type."""

    __slots__ = ("group_type",)

    def __init__(self, group_type: _Owner) -> None:
        self.group_type = group_type

    @property
    def state(self) -> CoordinatorState:
        return self.group_type.state

    @property
    def metadata(self) -> TopicMetadata:
        return self.group_type.metadata

    # -- the type's own API ----------------------------------------------------------------
    def consumer_group_heartbeat(
        self, cmd: ConsumerGroupHeartbeat, now_ms: int, token: Hashable
    ) -> Result:
        state = self.state
        # An empty group id is the type's INVALID_REQUEST (Kafka validates before routing).
        error = state.availability(cmd.group_id) if cmd.group_id.strip() else ErrorCode.NONE
        if error is ErrorCode.NONE:
            group = state.groups.get(cmd.group_id)
            if group is not None and group.group_type not in _CONVERTIBLE:
                # Kafka's answer to a group of another type; an empty client-balance group is
                # not converted (its epoch row would outlive the conversion in the store).
                return single_reply(
                    token,
                    ConsumerGroupHeartbeatReply(
                        ErrorCode.GROUP_ID_NOT_FOUND,
                        f"Group {cmd.group_id} is not a consumer group.",
                        member_id=cmd.member_id or None,
                    ),
                )
        if error is not ErrorCode.NONE:
            return single_reply(token, cmd.error_reply(error))
        return heartbeat.heartbeat(state, self.metadata, cmd, now_ms, token)

    def consumer_group_describe(
        self, cmd: ConsumerGroupDescribe, now_ms: int, token: Hashable
    ) -> Result:
        state = self.state
        described = []
        for group_id in cmd.group_ids:
            error = state.availability(group_id)
            group = state.groups.get(group_id)
            if error is not ErrorCode.NONE:
                described.append(DescribedConsumerGroup(group_id, error))
            elif group is None:
                described.append(
                    DescribedConsumerGroup(
                        group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
                    )
                )
            elif group.group_type != GROUP_TYPE:
                described.append(
                    DescribedConsumerGroup(
                        group_id,
                        ErrorCode.GROUP_ID_NOT_FOUND,
                        f"Group {group_id} is not a consumer group.",
                    )
                )
            else:
                described.append(self.group_type.describe_consumer_group(group))
        return single_reply(token, ConsumerGroupDescribeReply(tuple(described)))

    # -- classic requests naming a consumer group (`classic_requests`) --------------------
    def classic_join(
        self, group: ConsumerGroup, cmd: JoinGroup, now_ms: int, token: Hashable
    ) -> Result:
        state = self.state
        if group.members:
            return classic_requests.join(state, self.metadata, group, cmd, now_ms, token)
        if cmd.member_id:
            # A known member id and no classic group: the classic answer, nothing converted.
            # DIFFERS: Kafka also drops the empty consumer group from memory on this path
            # (`maybeDeleteEmptyConsumerGroup` runs before the member check) without writing
            # its tombstones, so it reappears on the next load; here it stays as it is.
            return single_reply(token, cmd.error_reply(ErrorCode.UNKNOWN_MEMBER_ID))
        result = Result()
        classic_requests.to_classic(state, result, group, now_ms)
        result.extend(join.join(state, cmd, now_ms, token))
        return result

    def classic_sync(
        self, group: ConsumerGroup, cmd: SyncGroup, now_ms: int, token: Hashable
    ) -> Result:
        return classic_requests.sync(self.state, self.metadata, group, cmd, now_ms, token)

    def classic_heartbeat(
        self, group: ConsumerGroup, cmd: Heartbeat, now_ms: int, token: Hashable
    ) -> Result:
        return classic_requests.heartbeat(self.state, group, cmd, now_ms, token)

    def classic_leave(
        self, group: ConsumerGroup, cmd: LeaveGroup, now_ms: int, token: Hashable
    ) -> Result:
        result, reply = classic_requests.leave(self.state, self.metadata, group, cmd, now_ms)
        result.reply(token, reply)
        return result
