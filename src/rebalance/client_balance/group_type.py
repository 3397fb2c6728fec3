"""`ClientBalanceGroupType`: TubeMQ's client-balance groups as the core sees them (`GroupType`).

The rules, as TubeMQ's master and brokers apply them (spec §D.6, §D.8):

* joining (`ClientBalanceHeartbeat` with epoch 0): a group id is one type at a time
  (CLIENT_INCONSISTENT_CONSUMETYPE 424 while a group of another type has members; an empty one is
  taken over, its offsets kept); every node subscribes the group's topic set
  (CLIENT_INCONSISTENT_TOPICSET 425); and when the group's source count is positive, a node
  brings the same source count (CLIENT_INCONSISTENT_SOURCECOUNT 429), a node id in
  [0, sourceCount - 1] (BAD_REQUEST 400) that no other live node has (CLIENT_DUPLICATE_INDEXID
  430). The first node of an empty group fixes its source count and topics; a source count ≤ 0
  turns the count and id checks off.
* a partition is registered by one node at a time: PARTITION_OCCUPIED (410) while its holder's
  session is live. A node whose session deadline has passed is removed before any request of
  its group is decided (the "stale holder removed first" of TubeMQ's broker), whether or not its
  timer has fired yet, so the outcome never depends on timer order.
* a partition key outside the node's topics or the cluster's partitions is NOT_FOUND (404), as
  TubeMQ's client answers a key missing from its partition metadata.
* a registration's bootstrap offset ≥ 0 replaces the committed offset, clamped to the
  partition's log range when the shell knows it (TubeMQ's `DefaultOffsetManager.loadOffset`:
  `MixedUtils.mid(offset, min, max)`); < 0 keeps it.
* a release by a node that does not hold the partition is DUPLICATE_PARTITION (412); of a
  partition nobody holds, HB_NO_NODE (411): TubeMQ's broker unregister.
* holdings change only by register, release and the holder's expiry (or leave). A heartbeat's
  report of what the node holds is not applied: the reply carries what the coordinator records,
  so a node whose view differs resynchronises (TubeMQ's heartbeats report; they never register
  or release).
* a session that expires frees the node's partitions.

The work is done one module a job, this class holding what they share (the core's state and
the topic metadata): `heartbeat` (join, leave, liveness), `partitions` (register, release),
`membership` (the acting node, stale nodes removed, leaving), `replay` (records written and
replayed), `views` (Describe/List), `offsets` (the commit fence), `routes` (the core's
dispatch). Everything durable goes through records (`records.py`) and `CoordinatorState.apply`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

from rebalance.client_balance import heartbeat, membership, offsets, partitions, replay, views
from rebalance.client_balance.commands import (
    ClientBalanceDescribe,
    ClientBalanceHeartbeat,
    RegisterPartitions,
    ReleasePartitions,
)
from rebalance.client_balance.group import GROUP_TYPE, ClientBalanceGroup
from rebalance.client_balance.records import ClientBalanceRecord, ClientBalanceValue
from rebalance.client_balance.replies import ClientBalanceDescribeReply
from rebalance.client_balance.routes import ClientBalanceRoutes
from rebalance.client_balance.timers import CLIENT_BALANCE_SESSION, client_balance_session_key
from rebalance.commands import Command, OffsetCommit
from rebalance.config import CoordinatorConfig
from rebalance.effects import Result
from rebalance.errors import ErrorCode
from rebalance.event_schema import ExpiryReason
from rebalance.group_types import CommitPartitionValidator, GroupType, Route
from rebalance.records import Record
from rebalance.replies import DescribedGroup, ListedGroup
from rebalance.state import CoordinatorState
from rebalance.timers import TimerKey
from rebalance.topics import TopicMetadata


class ClientBalanceGroupType(GroupType):
    """Client-balance groups over a `CoordinatorState`: requests, timers, records, views."""

    name: ClassVar[str] = GROUP_TYPE
    group_class: ClassVar[type[Any]] = ClientBalanceGroup
    record_class: ClassVar[type[Any]] = ClientBalanceRecord
    timer_kinds: ClassVar[frozenset[str]] = frozenset({CLIENT_BALANCE_SESSION})

    __slots__ = ("metadata", "state")

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state
        #: The cluster's topics as the shell last described them: a partition must exist to
        #: be registered.
        self.metadata = TopicMetadata()

    @property
    def config(self) -> CoordinatorConfig:
        return self.state.config

    # -- requests ------------------------------------------------------------------------
    def routes(self) -> Mapping[type[Command[Any]], Route]:
        routes = ClientBalanceRoutes(self)
        return {
            ClientBalanceHeartbeat: routes.heartbeat,
            RegisterPartitions: routes.register,
            ReleasePartitions: routes.release,
            ClientBalanceDescribe: routes.describe,
        }

    def heartbeat(self, cmd: ClientBalanceHeartbeat, now_ms: int, token: Hashable) -> Result:
        return heartbeat.heartbeat(self.state, cmd, now_ms, token)

    def register(self, cmd: RegisterPartitions, now_ms: int, token: Hashable) -> Result:
        return partitions.register(self.state, self.metadata, cmd, now_ms, token)

    def release(self, cmd: ReleasePartitions, now_ms: int, token: Hashable) -> Result:
        return partitions.release(self.state, cmd, now_ms, token)

    def describe_client_balance(self, cmd: ClientBalanceDescribe) -> ClientBalanceDescribeReply:
        return views.describe_client_balance(self.state, cmd)

    # -- offsets -------------------------------------------------------------------------
    def validate_offset_commit(
        self, result: Result, group: ClientBalanceGroup, cmd: OffsetCommit, now_ms: int
    ) -> CommitPartitionValidator | None:
        # A holder whose session deadline has passed commits nothing, fired or not.
        membership.expire_stale(self.state, result, group, now_ms)
        return offsets.validate_commit(group, cmd)

    @staticmethod
    def subscribed_topics(group: ClientBalanceGroup) -> set[str] | None:
        """The group's topic set (a non-empty group's offsets never expire and OffsetDelete
        refuses it anyway: its protocol is not "consumer")."""
        return set(group.topics)

    # -- timers, partitions, topics ------------------------------------------------------
    def on_timer(self, key: TimerKey, group: ClientBalanceGroup, now_ms: int) -> Result:
        result = Result()
        node = group.nodes.get(key[2])
        if node is not None:
            membership.remove(self.state, result, group, node, now_ms, ExpiryReason.SESSION_TIMEOUT)
        return result

    def topics_changed(self, metadata: TopicMetadata, now_ms: int) -> Result:
        """The shell's new topic snapshot. Registrations of partitions that no longer exist
        stay until their nodes release them or stop reporting them: as in TubeMQ, which
        partitions to drop when the metadata changes is the client's decision."""
        self.metadata = metadata
        return Result()

    def loaded(self, result: Result, group: ClientBalanceGroup, now_ms: int) -> None:
        """Sessions run from load time."""
        for node in group.nodes.values():
            self.state.schedule(
                result,
                client_balance_session_key(group.group_id, node.member_id),
                now_ms + node.session_timeout_ms,
            )

    @staticmethod
    def unloaded(result: Result, group: ClientBalanceGroup) -> None:
        """Nothing is ever parked: every request is answered at once."""

    # -- records -------------------------------------------------------------------------
    @staticmethod
    def replay(group: ClientBalanceGroup, value: ClientBalanceValue) -> None:
        replay.replay(group, value)

    @staticmethod
    def tombstones(group: ClientBalanceGroup) -> list[Record]:
        return replay.tombstones(group)

    # -- views ---------------------------------------------------------------------------
    @staticmethod
    def describe(group: ClientBalanceGroup) -> DescribedGroup:
        return views.describe(group)

    @staticmethod
    def listed(group: ClientBalanceGroup) -> ListedGroup:
        return views.listed(group)

    @staticmethod
    def deletable(group: ClientBalanceGroup) -> ErrorCode:
        return ErrorCode.NONE if group.empty else ErrorCode.NON_EMPTY_GROUP
