"""The embedded protocol: what a classic member puts in JoinGroup and how its leader assigns.

Kafka's group protocol carries opaque bytes: each member lists `(protocol name, metadata)`
pairs, the elected leader reads every member's metadata of the chosen protocol and returns one
opaque assignment per member. What the bytes mean is the embedded protocol's business; the
member state machine only needs the five things `EmbeddedProtocol` declares. `ConsumerEmbedded`
is Kafka's own (protocol type ``consumer``, ConsumerProtocol Subscription/Assignment v3, the
assignor's name as the protocol name), byte-compatible with Java and librdkafka members.

Rebalance protocol (KIP-429): a member is *cooperative* only if every assignor it lists is
(Java's `ConsumerCoordinator` picks the protocol all configured assignors support); with an
eager assignor anywhere in the list it revokes everything before each rejoin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from assignors import registry
from assignors.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)
from assignors.spec import GroupSpec, MemberSubscription, StaticTopics, TopicPartition
from rebalance.classic.replies import JoinGroupMember

COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})
"""Assignors that support Kafka's COOPERATIVE rebalance protocol (withhold moving partitions)."""


class EmbeddedProtocolError(ValueError):
    """Bytes from the group that this embedded protocol cannot read."""


class EmbeddedProtocol(Protocol):
    """What the member state machine needs from the protocol embedded in JoinGroup/SyncGroup."""

    @property
    def protocol_type(self) -> str: ...

    @property
    def cooperative(self) -> bool: ...

    def protocols(
        self,
        owned: frozenset[TopicPartition],
        previous: tuple[TopicPartition, ...],
        generation: int,
    ) -> tuple[tuple[str, bytes], ...]:
        """The JoinGroup protocol list: what this member owns now (cooperative), what it was
        last assigned and in which generation (sticky)."""
        ...

    def topics_needed(
        self, protocol_name: str, members: Sequence[JoinGroupMember]
    ) -> frozenset[str]:
        """Leader: the topics whose partition counts `assign` needs."""
        ...

    def assign(
        self,
        protocol_name: str,
        members: Sequence[JoinGroupMember],
        partition_counts: Mapping[str, int],
    ) -> dict[str, bytes]:
        """Leader: every member's assignment bytes."""
        ...

    def decode(self, assignment: bytes) -> frozenset[TopicPartition]:
        """A member's share from its SyncGroup assignment bytes."""
        ...


@dataclass(frozen=True)
class ConsumerEmbedded:
    """Kafka's consumer protocol: subscribe to `topics`, assign with `assignors` (preference
    order; the group uses the first one every member lists)."""

    topics: tuple[str, ...]
    assignors: tuple[str, ...] = ("cooperative-sticky",)
    rack: str | None = None
    protocol_type: str = "consumer"

    def __post_init__(self) -> None:
        if not self.assignors:
            raise ValueError("at least one assignor is needed")
        for name in self.assignors:
            registry.get(name)  # UnknownAssignorError, with the known names, if it is not there

    @property
    def cooperative(self) -> bool:
        return all(name in COOPERATIVE_ASSIGNORS for name in self.assignors)

    def protocols(
        self,
        owned: frozenset[TopicPartition],
        previous: tuple[TopicPartition, ...],
        generation: int,
    ) -> tuple[tuple[str, bytes], ...]:
        out: list[tuple[str, bytes]] = []
        for name in self.assignors:
            if name in COOPERATIVE_ASSIGNORS:
                user_data: bytes | None = encode_cooperative_user_data(generation)
            elif name in ("sticky", "uniform"):
                user_data = encode_sticky_user_data(previous, generation) if previous else None
            else:
                user_data = None
            subscription = Subscription(
                topics=tuple(self.topics),
                user_data=user_data,
                owned_partitions=tuple(sorted(owned)),
                generation=generation,
                rack=self.rack,
            )
            out.append((name, encode_subscription(subscription)))
        return tuple(out)

    def topics_needed(
        self, protocol_name: str, members: Sequence[JoinGroupMember]
    ) -> frozenset[str]:
        return frozenset(t for m in members for t in _subscription(m).topics)

    def assign(
        self,
        protocol_name: str,
        members: Sequence[JoinGroupMember],
        partition_counts: Mapping[str, int],
    ) -> dict[str, bytes]:
        spec = GroupSpec({m.member_id: _member_subscription(m) for m in members})
        result = registry.get(protocol_name).assign(spec, StaticTopics(dict(partition_counts)))
        return {
            m.member_id: encode_assignment(Assignment(tuple(result.get(m.member_id, ()))))
            for m in members
        }

    def decode(self, assignment: bytes) -> frozenset[TopicPartition]:
        if not assignment:
            return frozenset()  # Kafka's coordinator sends empty bytes to members left out
        try:
            return frozenset(decode_assignment(assignment).partitions)
        except ConsumerProtocolError as exc:
            raise EmbeddedProtocolError(str(exc)) from None


def _subscription(member: JoinGroupMember) -> Subscription:
    try:
        return decode_subscription(member.metadata)
    except ConsumerProtocolError as exc:
        raise EmbeddedProtocolError(f"member {member.member_id}: {exc}") from None


def _member_subscription(member: JoinGroupMember) -> MemberSubscription:
    """The assignor's view of one member: owned partitions and their generation come from the
    v1+ fields, or for eager sticky members from the user data (Java's StickyAssignor)."""
    sub = _subscription(member)
    owned = sub.owned_partitions
    generation: int | None = sub.generation if sub.generation >= 0 else None
    if sub.user_data:
        try:
            if len(sub.user_data) == 4:
                generation = (
                    generation
                    if generation is not None
                    else (decode_cooperative_user_data(sub.user_data))
                )
            else:
                sticky = decode_sticky_user_data(sub.user_data)
                owned = owned or sticky.previous_assignment
                generation = generation if generation is not None else sticky.generation
        except ConsumerProtocolError:
            pass  # foreign user data: no stickiness for this member, as Java's assignors do
    if generation is not None and generation < 0:
        generation = None
    return MemberSubscription(
        topics=frozenset(sub.topics),
        owned=tuple(owned),
        generation=generation,
        rack=sub.rack,
        instance_id=member.group_instance_id,
    )
