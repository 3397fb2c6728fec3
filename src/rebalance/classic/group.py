"""Classic group and member data with their invariants (Kafka's `ClassicGroup` /
`ClassicGroupMember`).

These are plain slotted classes, not pydantic models: they are mutated on every request and a
coordinator holds many of them, so per-object size matters (see benchmarks/bench_core.py).
The request *flow* lives in the phase modules of `rebalance.classic`; this module only keeps the
bookkeeping consistent: protocol support counts, the static-instance map, pending sets, the
leader, and the one way a group changes state (`Group.transition`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass

from rebalance.classic.commands import JoinGroup
from rebalance.classic.records import GroupMetadataValue, MemberMetadataValue
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.lifecycle import GroupState, fire, kafka_state_name
from rebalance.records import OffsetAndMetadata

#: A parked request's reply token: whatever the shell uses to route a reply back.
Token = Hashable
Protocols = tuple[tuple[str, bytes], ...]


class IdSet(dict[str, None]):
    """A set of member ids kept as a dict: an empty dict takes 64 bytes, an empty set 216, and
    every group holds two of these (pending joins, pending syncs) that are usually empty."""

    __slots__ = ()

    def add(self, member_id: str) -> None:
        self[member_id] = None

    def discard(self, member_id: str) -> None:
        self.pop(member_id, None)

    def add_all(self, member_ids: Iterable[str]) -> None:
        for member_id in member_ids:
            self[member_id] = None


@dataclass(slots=True, eq=False)
class Member:
    """One group member. `join_token`/`sync_token` are set while its request is parked."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_token: Token | None = None
    sync_token: Token | None = None
    is_new: bool = False
    #: The request version of the parked join: the reply's shape (SkipAssignment) depends on it.
    join_version: int = 0

    @classmethod
    def from_join(cls, member_id: str, cmd: JoinGroup, token: Token) -> Member:
        """A member admitted by `cmd`, its JoinGroup parked under `token`."""
        return cls(
            member_id=member_id,
            group_instance_id=cmd.group_instance_id,
            client_id=cmd.client_id,
            client_host=cmd.client_host,
            rebalance_timeout_ms=cmd.rebalance_timeout_ms,
            session_timeout_ms=cmd.session_timeout_ms,
            protocol_type=cmd.protocol_type,
            protocols=cmd.protocols,
            join_token=token,
            is_new=True,
            join_version=cmd.version,
        )

    @classmethod
    def from_value(cls, value: MemberMetadataValue, group: GroupMetadataValue) -> Member:
        """A member read back from its group's record (only the selected protocol survives)."""
        return cls(
            member_id=value.member_id,
            group_instance_id=value.group_instance_id,
            client_id=value.client_id,
            client_host=value.client_host,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            session_timeout_ms=value.session_timeout_ms,
            protocol_type=group.protocol_type or "",
            protocols=((group.protocol_name or "", value.subscription),),
            assignment=value.assignment,
        )

    def to_value(self, protocol: str | None, assignment: bytes) -> MemberMetadataValue:
        """This member as its group's record keeps it."""
        # (Positional: once per member each time its group's record is written.)
        return MemberMetadataValue(
            self.member_id,
            self.group_instance_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.session_timeout_ms,
            self.metadata_for(protocol) if protocol is not None else b"",  # subscription
            assignment,
        )

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def vote(self, candidates: set[str]) -> str:
        """The first protocol, in this member's preference order, that all members support."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "no common protocol")

    def matches(self, protocols: Protocols) -> bool:
        """Kafka's `matches`: same ordered (name, metadata) list; timeouts are not compared."""
        return self.protocols == protocols

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None


class Group:
    """A classic consumer group's state. Mutated only by the coordinator's verbs and `replay`."""

    #: Kafka's group type name (ListGroups' GroupType, the event log's `group_type`).
    group_type = "classic"

    __slots__ = (
        "current_state_timestamp_ms",
        "generation",
        "generation_members",
        "group_id",
        "initial_delay_ms",
        "initial_rebalance",
        "initial_remaining_ms",
        "leader_id",
        "members",
        "new_member_added",
        "num_awaiting_join",
        "offsets",
        "partition",
        "pending_join",
        "pending_sync",
        "protocol_name",
        "protocol_type",
        "state",
        "static_members",
        "supported_protocols",
        "sync_generation",
    )

    def __init__(self, group_id: str, partition: int, state: GroupState = GroupState.DOWN) -> None:
        self.group_id = group_id
        self.partition = partition
        self.state = state
        self.current_state_timestamp_ms = 0
        self.generation = 0
        #: How many members the current generation formed with (for the event log).
        self.generation_members = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_join = IdSet()
        self.pending_sync = IdSet()
        self.supported_protocols: dict[str, int] = {}
        self.num_awaiting_join = 0
        self.new_member_added = False
        #: True while the JOINING phase was entered from an empty group (initial delay applies).
        self.initial_rebalance = False
        #: The initial-delay timer's (delay, remaining) pair while it is armed.
        self.initial_delay_ms = 0
        self.initial_remaining_ms = 0
        #: Generation for which the pending-sync timer is armed (-1: none).
        self.sync_generation = -1
        #: (topic, partition) -> committed offset; changed only by replaying offset records.
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}

    # -- lifecycle guards (named in lifecycle.TRANSITIONS) ------------------------------------
    def has_members(self) -> bool:
        return bool(self.members)

    def is_empty(self) -> bool:
        return not self.members

    # -- the one way to change state -----------------------------------------------------
    def transition(self, trigger: str, now_ms: int | None) -> None:
        """Move along `trigger` (checked against `lifecycle.TRANSITIONS`) and stamp the time, as
        Kafka's `transitionTo` does. `now_ms` is None where no clock is involved: loading and
        unloading a partition, whose records carry their own timestamps."""
        fire(self, trigger)
        if now_ms is not None:
            self.current_state_timestamp_ms = now_ms

    # -- views -----------------------------------------------------------------------------
    @property
    def empty(self) -> bool:
        """Kafka's Empty state: STABLE with no members."""
        return not self.members and self.state is GroupState.STABLE

    @property
    def kafka_state(self) -> str:
        return kafka_state_name(self.state, bool(self.members))

    def can_rebalance(self) -> bool:
        return self.state is GroupState.STABLE or self.state is GroupState.AWAITING_SYNC

    def all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def joined_members(self) -> Iterator[Member]:
        return (m for m in self.members.values() if m.join_token is not None)

    # -- membership bookkeeping ------------------------------------------------------------
    def add_member(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        for name, _ in member.protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if member.join_token is not None:
            self.num_awaiting_join += 1
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove_member(self, member_id: str, next_leader: str | None) -> Member:
        """Remove a member; `next_leader` must be chosen by the caller when it was the leader."""
        member = self.members.pop(member_id)
        self._uncount_protocols(member.protocols)
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if member.join_token is not None:
            self.num_awaiting_join -= 1
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next_leader
        return member

    def update_protocols(self, member: Member, protocols: Protocols) -> None:
        self._uncount_protocols(member.protocols)
        member.protocols = protocols
        for name, _ in protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1

    def _uncount_protocols(self, protocols: Protocols) -> None:
        for name, _ in protocols:
            left = self.supported_protocols[name] - 1
            if left:
                self.supported_protocols[name] = left
            else:
                del self.supported_protocols[name]

    def park_join(self, member: Member, token: Token, version: int) -> Token | None:
        """Park a JoinGroup; returns the token it supersedes (answered by the caller)."""
        previous = member.join_token
        if previous is None:
            self.num_awaiting_join += 1
        member.join_token = token
        member.join_version = version
        return previous

    def unpark_join(self, member: Member) -> Token | None:
        token = member.join_token
        if token is not None:
            member.join_token = None
            self.num_awaiting_join -= 1
        return token

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def supports_protocols(self, protocol_type: str, protocols: Protocols) -> bool:
        """Kafka's `supportsProtocols`, checked on every JoinGroup with its (name, metadata)
        pairs.

        An empty group accepts any non-empty type and list (its previous type is forgotten).
        Otherwise the type must match and one of the names must be supported by every current
        member; a rejoining member is counted with its *old* protocols, as in Kafka.
        """
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        n = len(self.members)
        supported = self.supported_protocols
        for name, _ in protocols:  # noqa: SIM110 (a loop, not `any` over a generator: on every JoinGroup)
            if supported.get(name, 0) == n:
                return True
        return False

    def select_protocol(self) -> str:
        """Vote among protocols every member supports; most votes wins.

        Kafka breaks ties by hash-map order (implementation-defined). We break them by the
        order of first appearance in the members' votes (members in join order), so equal inputs
        always give the same protocol.
        """
        candidates = self.candidate_protocols()
        if not candidates:
            raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "no common protocol")
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def validate_member(self, member_id: str, instance_id: str | None) -> Member:
        """Kafka's `validateMember`: instance id checks first, then the member id."""
        if instance_id is not None:
            mapped = self.static_members.get(instance_id)
            if mapped is None:
                raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID, "unknown group.instance.id")
            if mapped != member_id:
                raise CoordinatorError(
                    ErrorCode.FENCED_INSTANCE_ID, f"{instance_id} is now member {mapped}"
                )
        member = self.members.get(member_id)
        if member is None:
            raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown member {member_id!r}")
        return member

    def __repr__(self) -> str:
        return (
            f"<Group {self.group_id!r} {self.kafka_state} gen={self.generation} "
            f"leader={self.leader_id!r} members={len(self.members)} "
            f"pending={len(self.pending_join)} offsets={len(self.offsets)}>"
        )


def metadata_value(group: Group, assignments: dict[str, bytes] | None = None) -> GroupMetadataValue:
    """The group as it is persisted: members with the selected protocol's metadata.

    `assignments`, when given, replaces every member's assignment (missing members: empty).
    """
    protocol = group.protocol_name
    return GroupMetadataValue(
        protocol_type=group.protocol_type,
        generation=group.generation,
        protocol_name=protocol,
        leader_id=group.leader_id,
        current_state_timestamp_ms=group.current_state_timestamp_ms,
        members=tuple(
            m.to_value(
                protocol,
                m.assignment if assignments is None else assignments.get(m.member_id, b""),
            )
            for m in group.members.values()
        ),
    )
