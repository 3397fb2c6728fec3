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

Everything durable goes through records (`records.py`) and `CoordinatorState.apply`.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

from assignors.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from rebalance.client_balance import offsets
from rebalance.client_balance.commands import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    ClientBalanceDescribe,
    ClientBalanceHeartbeat,
    PartitionRequest,
    RegisterPartitions,
    ReleasePartitions,
)
from rebalance.client_balance.group import (
    GROUP_TYPE,
    ClientBalanceGroup,
    Node,
    TopicPartition,
    freeze,
)
from rebalance.client_balance.records import (
    ClientBalanceRecord,
    ClientBalanceValue,
    GroupEpochValue,
    HolderValue,
    NodeValue,
    RecordKind,
    Tombstone,
    holder_key,
    parse_holder_key,
)
from rebalance.client_balance.routes import ClientBalanceRoutes
from rebalance.commands import Command, OffsetCommit
from rebalance.config import CoordinatorConfig
from rebalance.effects import Result, single_reply
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.event_schema import EventType, ExpiryReason, LeaveReason, ReleaseReason
from rebalance.group_types import CommitPartitionValidator, GroupType, Route
from rebalance.records import OffsetAndMetadata, OffsetCommitRecord, Record
from rebalance.replies import (
    ClientBalanceDescribeReply,
    ClientBalanceHeartbeatReply,
    DescribedClientBalanceGroup,
    DescribedGroup,
    DescribedMember,
    DescribedNode,
    ListedGroup,
    RegisteredPartition,
    RegisterPartitionsReply,
    ReleasedPartition,
    ReleasePartitionsReply,
)
from rebalance.state import CoordinatorState
from rebalance.timers import CLIENT_BALANCE_SESSION, TimerKey, client_balance_session_key
from rebalance.topics import TopicMetadata

#: How often a node is asked to heartbeat: a third of its session, as Kafka's clients default.
HEARTBEAT_FRACTION = 3


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

    def routes(self) -> Mapping[type[Command[Any]], Route]:
        routes = ClientBalanceRoutes(self)
        return {
            ClientBalanceHeartbeat: routes.heartbeat,
            RegisterPartitions: routes.register,
            ReleasePartitions: routes.release,
            ClientBalanceDescribe: routes.describe,
        }

    # ============================================================================ heartbeat
    def heartbeat(self, cmd: ClientBalanceHeartbeat, now_ms: int, token: Hashable) -> Result:
        result = Result()
        try:
            if not cmd.member_id:
                raise CoordinatorError(ErrorCode.BAD_REQUEST, "the member id must not be empty")
            if cmd.member_epoch == JOIN_EPOCH:
                reply = self._join(result, cmd, now_ms)
            elif cmd.member_epoch == LEAVE_EPOCH:
                reply = self._leave(result, cmd, now_ms)
            else:
                reply = self._heartbeat(result, cmd, now_ms)
        except CoordinatorError as exc:
            return single_reply(token, ClientBalanceHeartbeatReply(exc.code, exc.message or None))
        result.reply(token, reply)
        return result

    def _join(
        self, result: Result, cmd: ClientBalanceHeartbeat, now_ms: int
    ) -> ClientBalanceHeartbeatReply:
        cfg = self.config
        if (
            not cfg.group_min_session_timeout_ms
            <= cmd.session_timeout_ms
            <= (cfg.group_max_session_timeout_ms)
        ):
            raise CoordinatorError(
                ErrorCode.INVALID_SESSION_TIMEOUT,
                f"session timeout {cmd.session_timeout_ms} ms outside "
                f"[{cfg.group_min_session_timeout_ms}, {cfg.group_max_session_timeout_ms}]",
            )
        if not cmd.topics:
            raise CoordinatorError(ErrorCode.BAD_REQUEST, "a node subscribes at least one topic")
        if cmd.source_count > 0 and not 0 <= cmd.node_id < cmd.source_count:
            # TubeMQ's client checks this in start() and its master again at registration.
            raise CoordinatorError(
                ErrorCode.BAD_REQUEST,
                f"nodeId {cmd.node_id} outside [0, {cmd.source_count - 1}] "
                f"(sourceCount {cmd.source_count})",
            )
        group = self._group_for_join(result, cmd)
        self.expire_stale(result, group, now_ms)
        topics = tuple(sorted(set(cmd.topics)))
        self._check_consistent(group, cmd, topics)
        node = group.nodes.get(cmd.member_id)
        if node is None:
            epoch = group.group_epoch + 1
            if group.nodes:
                fixed = GroupEpochValue(epoch, group.source_count, group.topics)
            else:  # the first node of an empty group fixes them until the group empties
                fixed = GroupEpochValue(epoch, cmd.source_count, topics)
            self._apply(result, group.group_id, fixed)
        else:
            epoch = node.member_epoch  # a re-join keeps its incarnation and partitions
        value = NodeValue(
            cmd.member_id,
            epoch,
            cmd.source_count,
            cmd.node_id,
            topics,
            cmd.client_id,
            cmd.client_host,
            cmd.session_timeout_ms,
        )
        if node is None or node.value() != value:
            self._apply(result, group.group_id, value)
        if node is None:
            result.event(
                EventType.MEMBER_JOINED,
                now_ms,
                group.group_id,
                epoch,
                cmd.member_id,
                group_type=GROUP_TYPE,
                client_id=cmd.client_id,
                instance_id=None,
                protocols=[],
                source_count=cmd.source_count,
                node_id=cmd.node_id,
            )
        return self._alive(result, group, group.nodes[cmd.member_id], now_ms)

    def _group_for_join(self, result: Result, cmd: ClientBalanceHeartbeat) -> ClientBalanceGroup:
        group = self.state.groups.get(cmd.group_id)
        if isinstance(group, ClientBalanceGroup):
            return group
        if group is not None:
            if not (group.empty and group.group_type == "classic"):
                # An empty consumer group is refused too: its keyed rows (target epoch) would
                # outlive a takeover in the store.
                raise CoordinatorError(
                    ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE,
                    f"group {cmd.group_id} is a {group.group_type} group"
                    + (" with members" if not group.empty else ""),
                )
            # An empty classic group (offsets only, say) becomes a client-balance group, its
            # offsets kept: our record converts it, then its tombstone clears its row (a
            # type's tombstone deletes only a group of its own type).
            self._apply(result, cmd.group_id, GroupEpochValue(0))
            for record in self.state.type_of(group).tombstones(group):
                self.state.apply(result, record)
        else:
            self._apply(result, cmd.group_id, GroupEpochValue(0))
        created = self.state.groups[cmd.group_id]
        assert isinstance(created, ClientBalanceGroup)
        return created

    @staticmethod
    def _check_consistent(
        group: ClientBalanceGroup, cmd: ClientBalanceHeartbeat, topics: tuple[str, ...]
    ) -> None:
        """TubeMQ's `ConsumeGroupInfo.validConsumerInfo`: against the group's topics and source
        count (a re-join of a node is checked too), the node id against the other nodes."""
        if not group.nodes:
            return  # the first node fixes the group's topics and source count
        if topics != group.topics:
            raise CoordinatorError(
                ErrorCode.CLIENT_INCONSISTENT_TOPICSET,
                f"topics {list(topics)} differ from the group's {list(group.topics)}",
            )
        if group.source_count <= 0:
            return  # the group turned the sourceCount/nodeId checks off
        if cmd.source_count != group.source_count:
            raise CoordinatorError(
                ErrorCode.CLIENT_INCONSISTENT_SOURCECOUNT,
                f"sourceCount {cmd.source_count} differs from the group's {group.source_count}",
            )
        for other in group.nodes.values():
            if other.member_id != cmd.member_id and other.node_id == cmd.node_id:
                raise CoordinatorError(
                    ErrorCode.CLIENT_DUPLICATE_INDEXID,
                    f"nodeId {cmd.node_id} is held by {other.member_id}",
                )

    def _leave(
        self, result: Result, cmd: ClientBalanceHeartbeat, now_ms: int
    ) -> ClientBalanceHeartbeatReply:
        group = self._own_group(cmd.group_id)
        self.expire_stale(result, group, now_ms)
        node = group.nodes.get(cmd.member_id)
        if node is None:
            raise CoordinatorError(
                ErrorCode.HB_NO_NODE, f"{cmd.member_id} is not a node of {cmd.group_id}"
            )
        self._remove(result, group, node, now_ms, None)
        return ClientBalanceHeartbeatReply(ErrorCode.NONE, member_epoch=LEAVE_EPOCH)

    def _heartbeat(
        self, result: Result, cmd: ClientBalanceHeartbeat, now_ms: int
    ) -> ClientBalanceHeartbeatReply:
        # `cmd.held` is the node's report: never applied (its snapshot may predate a
        # registration answered meanwhile); the reply's book is what the node syncs to.
        group, node = self._acting_node(
            result, cmd.group_id, cmd.member_id, cmd.member_epoch, now_ms
        )
        return self._alive(result, group, node, now_ms)

    def _alive(
        self, result: Result, group: ClientBalanceGroup, node: Node, now_ms: int
    ) -> ClientBalanceHeartbeatReply:
        self.state.schedule(
            result,
            client_balance_session_key(group.group_id, node.member_id),
            now_ms + node.session_timeout_ms,
        )
        return ClientBalanceHeartbeatReply(
            ErrorCode.NONE,
            member_epoch=node.member_epoch,
            heartbeat_interval_ms=max(1, node.session_timeout_ms // HEARTBEAT_FRACTION),
            source_count=group.source_count,
            held=freeze(node.held),
        )

    # ====================================================================== partitions
    def register(self, cmd: RegisterPartitions, now_ms: int, token: Hashable) -> Result:
        result = Result()
        try:
            group, node = self._acting_node(
                result, cmd.group_id, cmd.member_id, cmd.member_epoch, now_ms
            )
        except CoordinatorError as exc:
            result.reply(token, cmd.error_reply(exc.code))
            return result
        outcomes = []
        for request in cmd.partitions:
            tp = (request.topic, request.partition)
            error = self._partition_error(node, tp)
            holder = group.holders.get(tp)
            if error is None and holder is not None and holder != node.member_id:
                outcomes.append(
                    RegisteredPartition(*tp, ErrorCode.PARTITION_OCCUPIED, holder=holder)
                )
                continue
            if error is not None:
                outcomes.append(RegisteredPartition(*tp, error))
                continue
            bootstrap = bootstrap_offset(request)
            if holder is None:
                self._hold(result, group, node, tp, now_ms, bootstrap)
            if bootstrap is not None:
                self.state.apply(
                    result,
                    OffsetCommitRecord(
                        group.group_id, *tp, OffsetAndMetadata(bootstrap, -1, "", now_ms)
                    ),
                )
            stored = group.offsets.get(tp)
            outcomes.append(
                RegisteredPartition(*tp, ErrorCode.NONE, stored.offset if stored else -1)
            )
        result.reply(token, RegisterPartitionsReply(ErrorCode.NONE, tuple(outcomes)))
        return result

    def release(self, cmd: ReleasePartitions, now_ms: int, token: Hashable) -> Result:
        result = Result()
        try:
            group, node = self._acting_node(
                result, cmd.group_id, cmd.member_id, cmd.member_epoch, now_ms
            )
        except CoordinatorError as exc:
            result.reply(token, cmd.error_reply(exc.code))
            return result
        outcomes = []
        for request in cmd.partitions:
            tp = (request.topic, request.partition)
            holder = group.holders.get(tp)
            if holder == node.member_id:
                self._release(result, group, node, tp, now_ms, ReleaseReason.RELEASE)
                outcomes.append(ReleasedPartition(*tp, ErrorCode.NONE))
            elif holder is not None:  # TubeMQ's broker: "has been consumed by" another
                outcomes.append(ReleasedPartition(*tp, ErrorCode.DUPLICATE_PARTITION))
            else:  # TubeMQ's broker: unregistered ("you have to register firstly"); a retry
                outcomes.append(ReleasedPartition(*tp, ErrorCode.HB_NO_NODE))
        result.reply(token, ReleasePartitionsReply(ErrorCode.NONE, tuple(outcomes)))
        return result

    def _partition_error(self, node: Node, tp: TopicPartition) -> ErrorCode | None:
        topic, partition = tp
        info = self.metadata.topics.get(topic)
        if topic not in node.topics or info is None or not 0 <= partition < info.partitions:
            return ErrorCode.NOT_FOUND  # not in the node's partition metadata, as TubeMQ's
        return None

    def _hold(
        self,
        result: Result,
        group: ClientBalanceGroup,
        node: Node,
        tp: TopicPartition,
        now_ms: int,
        bootstrap: int | None,
    ) -> None:
        self._apply(result, group.group_id, HolderValue(*tp, node.member_id, node.member_epoch))
        fields: dict[str, Any] = {"bootstrap_offset": bootstrap} if bootstrap is not None else {}
        result.event(
            EventType.PARTITION_REGISTERED,
            now_ms,
            group.group_id,
            node.member_epoch,
            node.member_id,
            group_type=GROUP_TYPE,
            topic=tp[0],
            topic_partition=tp[1],
            **fields,
        )

    def _release(
        self,
        result: Result,
        group: ClientBalanceGroup,
        node: Node,
        tp: TopicPartition,
        now_ms: int,
        reason: ReleaseReason,
    ) -> None:
        self._apply(result, group.group_id, Tombstone(RecordKind.HOLDER, holder_key(*tp)))
        result.event(
            EventType.PARTITION_RELEASED,
            now_ms,
            group.group_id,
            node.member_epoch,
            node.member_id,
            group_type=GROUP_TYPE,
            topic=tp[0],
            topic_partition=tp[1],
            reason=reason,
        )

    # ====================================================================== membership
    def _own_group(self, group_id: str) -> ClientBalanceGroup:
        group = self.state.groups.get(group_id)
        if not isinstance(group, ClientBalanceGroup):
            if group is not None and not group.empty:
                raise CoordinatorError(
                    ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE,
                    f"group {group_id} is a {group.group_type} group",
                )
            raise CoordinatorError(ErrorCode.HB_NO_NODE, f"group {group_id} has no nodes")
        return group

    def _acting_node(
        self, result: Result, group_id: str, member_id: str, member_epoch: int, now_ms: int
    ) -> tuple[ClientBalanceGroup, Node]:
        """The group and the node a request comes from, after the group's stale holders are
        gone (a request is decided against live nodes only); CoordinatorError otherwise."""
        group = self._own_group(group_id)
        self.expire_stale(result, group, now_ms)
        return group, self._node(group, member_id, member_epoch)

    @staticmethod
    def _node(group: ClientBalanceGroup, member_id: str, member_epoch: int) -> Node:
        node = group.nodes.get(member_id)
        if node is None or node.member_epoch != member_epoch:
            raise CoordinatorError(
                ErrorCode.HB_NO_NODE,
                f"{member_id} (epoch {member_epoch}) is not a node of {group.group_id}",
            )
        return node

    def expire_stale(self, result: Result, group: ClientBalanceGroup, now_ms: int) -> None:
        """Remove the nodes whose session deadline has passed, fired or not."""
        for node in list(group.nodes.values()):
            key = client_balance_session_key(group.group_id, node.member_id)
            deadline = self.state.timers.get(key)
            if deadline is not None and deadline <= now_ms:
                self._remove(result, group, node, now_ms, ExpiryReason.SESSION_TIMEOUT)

    def _remove(
        self,
        result: Result,
        group: ClientBalanceGroup,
        node: Node,
        now_ms: int,
        expiry: ExpiryReason | None,
    ) -> None:
        reason = ReleaseReason.LEFT if expiry is None else ReleaseReason.EXPIRED
        for tp in sorted(node.held):
            self._release(result, group, node, tp, now_ms, reason)
        self._apply(result, group.group_id, Tombstone(RecordKind.NODE, node.member_id))
        self.state.cancel(result, client_balance_session_key(group.group_id, node.member_id))
        if expiry is None:
            result.event(
                EventType.MEMBER_LEFT,
                now_ms,
                group.group_id,
                node.member_epoch,
                node.member_id,
                group_type=GROUP_TYPE,
                reason=LeaveReason.LEAVE,
            )
        else:
            result.event(
                EventType.MEMBER_EXPIRED,
                now_ms,
                group.group_id,
                node.member_epoch,
                node.member_id,
                group_type=GROUP_TYPE,
                reason=expiry,
                session_timeout_ms=node.session_timeout_ms,
            )

    # ========================================================================== timers
    def on_timer(self, key: TimerKey, group: ClientBalanceGroup, now_ms: int) -> Result:
        result = Result()
        node = group.nodes.get(key[2])
        if node is not None:
            self._remove(result, group, node, now_ms, ExpiryReason.SESSION_TIMEOUT)
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

    # ========================================================================= records
    def _apply(self, result: Result, group_id: str, value: ClientBalanceValue) -> None:
        self.state.apply(result, ClientBalanceRecord(group_id, value))

    @staticmethod
    def replay(group: ClientBalanceGroup, value: ClientBalanceValue) -> None:
        """Apply one record value: the same code for live changes and for loading."""
        if isinstance(value, GroupEpochValue):
            group.group_epoch = max(group.group_epoch, value.epoch)
            group.fixed_source_count = value.source_count
            group.fixed_topics = value.topics
        elif isinstance(value, NodeValue):
            node = group.nodes.get(value.member_id)
            if node is None:
                node = group.add_node(value.member_id)
            node.apply(value)
        elif isinstance(value, HolderValue):
            group.hold((value.topic, value.partition), value.member_id)
        elif value.kind is RecordKind.NODE:
            group.remove_node(value.name)
        elif value.kind is RecordKind.HOLDER:
            group.free(parse_holder_key(value.name))

    def tombstones(self, group: ClientBalanceGroup) -> list[Record]:
        """Every key the group has: holders, nodes, then the group itself."""
        records: list[Record] = [
            ClientBalanceRecord(group.group_id, Tombstone(RecordKind.HOLDER, holder_key(*tp)))
            for tp in sorted(group.holders)
        ]
        records.extend(
            ClientBalanceRecord(group.group_id, Tombstone(RecordKind.NODE, member_id))
            for member_id in sorted(group.nodes)
        )
        records.append(ClientBalanceRecord(group.group_id, None))
        return records

    # ========================================================================== views
    @staticmethod
    def describe(group: ClientBalanceGroup) -> DescribedGroup:
        """DescribeGroups: the nodes as members. Each member's metadata is a ConsumerProtocol
        subscription of the group's topics whose user data is the node's
        `{"sourceCount": .., "nodeId": ..}` in JSON; its assignment is a ConsumerProtocol
        assignment of the partitions it holds, so tools that decode consumer groups can read
        both (the protocol type, "client-balance", tells them it is not one)."""
        members = tuple(
            DescribedMember(
                member_id=node.member_id,
                group_instance_id=None,
                client_id=node.client_id,
                client_host=node.client_host,
                metadata=encode_subscription(
                    Subscription(node.topics, node_user_data(node.source_count, node.node_id)),
                    0,
                ),
                assignment=encode_assignment(Assignment(tuple(sorted(node.held))), 0),
            )
            for node in group.nodes.values()
        )
        return DescribedGroup(
            group.group_id,
            ErrorCode.NONE,
            state=group.kafka_state,
            protocol_type=GROUP_TYPE,
            protocol_data="",
            members=members,
        )

    def describe_client_balance(self, cmd: ClientBalanceDescribe) -> ClientBalanceDescribeReply:
        return ClientBalanceDescribeReply(tuple(self._described(g) for g in cmd.group_ids))

    def _described(self, group_id: str) -> DescribedClientBalanceGroup:
        group = self.state.groups.get(group_id)
        if group is None:
            return DescribedClientBalanceGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND)
        if not isinstance(group, ClientBalanceGroup):
            return DescribedClientBalanceGroup(group_id, ErrorCode.CLIENT_INCONSISTENT_CONSUMETYPE)
        return DescribedClientBalanceGroup(
            group_id,
            ErrorCode.NONE,
            state=group.kafka_state,
            group_epoch=group.group_epoch,
            source_count=group.source_count,
            topics=group.topics,
            nodes=tuple(
                DescribedNode(
                    member_id=n.member_id,
                    member_epoch=n.member_epoch,
                    client_id=n.client_id,
                    client_host=n.client_host,
                    source_count=n.source_count,
                    node_id=n.node_id,
                    topics=n.topics,
                    held=freeze(n.held),
                )
                for n in sorted(group.nodes.values(), key=lambda n: (n.node_id, n.member_id))
            ),
        )

    @staticmethod
    def listed(group: ClientBalanceGroup) -> ListedGroup:
        return ListedGroup(group.group_id, GROUP_TYPE, group.kafka_state, GROUP_TYPE)

    @staticmethod
    def deletable(group: ClientBalanceGroup) -> ErrorCode:
        return ErrorCode.NONE if group.empty else ErrorCode.NON_EMPTY_GROUP

    # ========================================================================= offsets
    def validate_offset_commit(
        self, result: Result, group: ClientBalanceGroup, cmd: OffsetCommit, now_ms: int
    ) -> CommitPartitionValidator | None:
        # A holder whose session deadline has passed commits nothing, fired or not.
        self.expire_stale(result, group, now_ms)
        return offsets.validate_commit(group, cmd)

    @staticmethod
    def subscribed_topics(group: ClientBalanceGroup) -> set[str] | None:
        """The group's topic set (a non-empty group's offsets never expire and OffsetDelete
        refuses it anyway: its protocol is not "consumer")."""
        return set(group.topics)


def bootstrap_offset(request: PartitionRequest) -> int | None:
    """The offset a registration starts from: None keeps the committed one (< 0); else the
    requested offset within the partition's log range when known (TubeMQ's `MixedUtils.mid`:
    beyond the log end starts at the end, below the start at the start)."""
    if request.bootstrap_offset < 0:
        return None
    if request.log_range is None:
        return request.bootstrap_offset
    start, end = request.log_range
    return max(start, min(end, request.bootstrap_offset))


def node_user_data(source_count: int, node_id: int) -> bytes:
    """A node's sourceCount and nodeId as DescribeGroups carries them (JSON, UTF-8)."""
    return json.dumps({"sourceCount": source_count, "nodeId": node_id}).encode()
