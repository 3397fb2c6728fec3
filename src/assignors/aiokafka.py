"""Any assignor of this package as an aiokafka plug-in (``partition_assignment_strategy``).

Usage::

    from aiokafka import AIOKafkaConsumer
    from assignors.aiokafka import assignor

    consumer = AIOKafkaConsumer("t0", group_id="g",
                                partition_assignment_strategy=(assignor("sticky"),))

aiokafka calls four things on each configured assignor: ``name``, ``metadata(topics)`` before
every JoinGroup, ``assign(cluster, members)`` on the leader, and ``on_assignment(assignment)``
after SyncGroup. Pass an *instance* (as above): all state lives in the instance, so several
consumers in one process never share it (unlike aiokafka's own sticky assignor, whose class
attributes are shared). The class itself, as aiokafka's own assignors are passed, is refused
where aiokafka first reads it: `start()` fails with a line saying to pass an instance.

What aiokafka (0.14) cannot do, and what this plug-in does about it:

* *No cooperative protocol.* aiokafka revokes every partition before each JoinGroup and never
  rejoins after a partial revocation. So this plug-in reports no owned partitions (that would be
  untrue, and a cooperative leader elsewhere would withhold partitions waiting for a rejoin that
  never comes), and ``cooperative-sticky`` run by an aiokafka leader computes the eager sticky
  assignment (withholding would leave partitions unassigned until the next rebalance). Groups
  that mix aiokafka members with Java/librdkafka members running the real cooperative protocol
  are therefore not safe under an aiokafka leader: use ``sticky`` for such groups.
* *The leader only sees v0 subscription fields* (topics and user data); owned partitions,
  generation and rack of other members are dropped by aiokafka's decoder, and static instance ids
  are not passed on. So the previous assignment and its generation travel in the user data, in
  Java StickyAssignor's layout v1 (what Java's sticky and librdkafka's cooperative-sticky write),
  for the sticky family and ``uniform``; a Java leader reads it the same way. Member racks are
  invisible to an aiokafka leader, so rack-aware assignment is off there (partition racks are
  still read from the metadata).
* *No generation is given to assignors* (``on_generation_assignment`` is never called by
  aiokafka). The leader therefore stamps an assignment epoch, one more than the highest
  generation any member reports, into every assignment's user data (an int32, ignored by Java
  and librdkafka), and members adopt it in ``on_assignment``; it tracks the group generation
  whenever one member was in the previous generation. An application that knows the real
  generation may call ``on_generation_assignment`` itself. After a Java leader (no stamp) the
  generation is unknown and is sent as -1, which loses ownership conflicts, the safe side.
* *assign() runs synchronously on the event loop*, with heartbeats stopped; if it outlasts the
  session timeout (10 s by default) the leader is expelled and the group rebalances forever.
  The assignors here are linear-time in partitions (milliseconds at 10k partitions, about a
  second at a million, see benchmarks/RESULTS.md); keep the group's partition count within what
  the measured times allow, or raise ``session_timeout_ms``/``rebalance_timeout_ms``.

Our subscription bytes are full v3 ConsumerProtocol messages (topics sorted, generation, rack),
byte-identical to Java's; aiokafka sends bytes as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from . import registry
from .consumer_protocol import (
    ConsumerProtocolError,
    Subscription,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)
from .spec import GroupSpec, MemberSubscription, PartitionAssignor, TopicPartition

log = logging.getLogger(__name__)

CARRIES_PREVIOUS_ASSIGNMENT = frozenset({"sticky", "cooperative-sticky", "uniform"})
"""Assignors whose members send their previous assignment (and generation) in user data."""


class ClusterTopics:
    """A `TopicDescriber` over aiokafka's ``ClusterMetadata``.

    Replica racks come from the partition metadata's replica list (a private attribute of
    ``ClusterMetadata``, the only place aiokafka keeps it) and each broker's ``rack``.
    """

    def __init__(self, cluster: Any) -> None:
        self._cluster = cluster

    def partition_count(self, topic: str) -> int | None:
        partitions = self._cluster.partitions_for_topic(topic)
        if not partitions:
            return None
        return int(max(partitions)) + 1

    def replica_racks(self, topic: str, partition: int) -> frozenset[str]:
        metadata = getattr(self._cluster, "_partitions", {}).get(topic, {}).get(partition)
        if metadata is None:
            return frozenset()
        racks: set[str] = set()
        for broker_id in metadata.replicas:
            broker = self._cluster.broker_metadata(broker_id)
            if broker is not None and broker.rack:
                racks.add(broker.rack)
        return frozenset(racks)


class _InstancesOnly(type):
    """aiokafka's own assignors are passed as classes; ours hold per-consumer state, so the class
    itself is refused, clearly, where aiokafka first touches it (it reads `name` and calls
    `metadata` on each configured assignor before its first JoinGroup)."""

    def _refuse(cls) -> TypeError:
        return TypeError(
            f"pass an instance, assignors.aiokafka.assignor('sticky'), not the class "
            f"{cls.__name__}, in partition_assignment_strategy"
        )

    @property
    def name(cls) -> str:
        raise cls._refuse()

    @property
    def metadata(cls) -> Any:
        raise cls._refuse()


class AiokafkaAssignor(metaclass=_InstancesOnly):
    """aiokafka's assignor interface around one of our assignors, with per-instance state."""

    def __init__(self, assignor: PartitionAssignor, *, client_rack: str | None = None) -> None:
        self._assignor = assignor
        self._client_rack = client_rack
        self._carry = assignor.name in CARRIES_PREVIOUS_ASSIGNMENT
        self._assignment: tuple[TopicPartition, ...] | None = None
        self._generation: int | None = None

    @property
    def name(self) -> str:
        return self._assignor.name

    @property
    def generation(self) -> int | None:
        """The generation of the last assignment (``None`` when unknown)."""
        return self._generation

    @property
    def current_assignment(self) -> tuple[TopicPartition, ...]:
        """The partitions received in the last assignment."""
        return self._assignment or ()

    # -- member side ------------------------------------------------------------------------

    def metadata(self, topics: Iterable[str]) -> bytes:
        """Subscription v3 bytes: topics, the previous assignment in user data, generation, rack."""
        user_data = None
        if self._carry and self._assignment is not None:
            user_data = encode_sticky_user_data(self._assignment, self._generation_or_default())
        subscription = Subscription(
            topics=tuple(topics),
            user_data=user_data,
            owned_partitions=(),
            generation=self._generation_or_default(),
            rack=self._client_rack,
        )
        return encode_subscription(subscription)

    def on_assignment(self, assignment: Any) -> None:
        """Remember the partitions received and the leader's assignment epoch."""
        self._assignment = tuple(sorted((tp.topic, tp.partition) for tp in assignment.partitions()))
        stamp = assignment.user_data
        self._generation = None
        if stamp:
            try:
                self._generation = decode_cooperative_user_data(bytes(stamp))
            except ConsumerProtocolError:
                log.warning("assignment user data is not a generation stamp; generation unknown")

    def on_generation_assignment(self, generation: int) -> None:
        """Record the real group generation (aiokafka never calls this; applications may)."""
        self._generation = generation

    def _generation_or_default(self) -> int:
        return -1 if self._generation is None else self._generation

    # -- leader side ------------------------------------------------------------------------

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> dict[str, Any]:
        """Decode the members' v0 metadata, run the assignor, encode every member's share."""
        from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

        spec = GroupSpec({m: self._member(m, md) for m, md in members.items()})
        result = self._assignor.assign(spec, ClusterTopics(cluster))
        known = [s.generation for s in spec.members.values() if s.generation is not None]
        stamp = encode_cooperative_user_data(max(known, default=-1) + 1)
        out: dict[str, Any] = {}
        for member_id in members:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(result.get(member_id, [])):
                by_topic.setdefault(topic, []).append(partition)
            out[member_id] = ConsumerProtocolMemberAssignment(
                0, sorted(by_topic.items()), stamp if self._carry else b""
            )
        return out

    def _member(self, member_id: str, metadata: Any) -> MemberSubscription:
        topics = frozenset(metadata.subscription)
        owned: tuple[TopicPartition, ...] = ()
        generation: int | None = None
        user_data = bytes(metadata.user_data or b"")
        if self._carry and user_data:
            try:
                sticky = decode_sticky_user_data(user_data)
                owned, generation = sticky.previous_assignment, sticky.generation
            except ConsumerProtocolError:
                if len(user_data) == 4:  # Java cooperative-sticky: generation only
                    generation = decode_cooperative_user_data(user_data)
                else:
                    log.warning("member %s: unreadable sticky user data, no stickiness", member_id)
        return MemberSubscription(topics=topics, owned=owned, generation=generation)


class _EagerCooperative:
    """cooperative-sticky computed without withholding (see the module docstring)."""

    def __init__(self) -> None:
        self._sticky = registry.get("sticky")

    @property
    def name(self) -> str:
        return "cooperative-sticky"

    def assign(self, spec: GroupSpec, topics: Any) -> dict[str, list[TopicPartition]]:
        return self._sticky.assign(spec, topics)


def assignor(name: str, *, client_rack: str | None = None) -> AiokafkaAssignor:
    """An aiokafka-compatible assignor instance for the registered assignor ``name``."""
    inner: PartitionAssignor = registry.get(name)
    if name == "cooperative-sticky":
        inner = _EagerCooperative()
    return AiokafkaAssignor(inner, client_rack=client_rack)
