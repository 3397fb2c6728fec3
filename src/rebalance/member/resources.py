"""Named resources shared through a Kafka group: an embedded protocol of our own.

Kafka Connect shares connectors and tasks among its workers with the group protocol under its
own `protocol_type` ("connect"); the coordinator neither knows nor cares what is assigned. This
protocol does the same for any named resources (shards, tenants, jobs): protocol type
``resources`` by default, one protocol ``weighted-sticky``.

Metadata (JoinGroup), JSON, version 1::

    {"v": 1, "resources": [names this member may own], "weight": w,
     "owned": [names it owns now], "generation": g}

Assignment (SyncGroup): ``{"v": 1, "resources": [names]}``.

The leader assigns with the project's sticky assignor (each resource is a one-partition topic
named after it; a member may only get resources it listed). A member of weight `w` takes part as
`w` slots, so shares are proportional to weights; its owned resources are spread over its slots
so that stickiness holds. Then, cooperatively (KIP-429's rule, applied per member rather than per
slot): a resource assigned to a member while another member still claims it is withheld for
this round; its owner revokes it and rejoins, and the next round hands it over. So a resource is
never announced to a new owner before its old owner's `on_revoked` has returned — unless the
old owner is gone from the group (left, or expired by the coordinator), which the ownership
lease covers (see docs/member.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assignors import registry
from assignors.spec import GroupSpec, MemberSubscription, StaticTopics, TopicPartition
from rebalance.classic.replies import JoinGroupMember
from rebalance.member.embedded import EmbeddedProtocolError

PROTOCOL_NAME = "weighted-sticky"
VERSION = 1


def item(name: str) -> TopicPartition:
    """A resource as the member state machine counts it: a one-partition topic."""
    return (name, 0)


@dataclass(frozen=True)
class _Claim:
    member_id: str
    instance_id: str | None
    resources: frozenset[str]
    weight: int
    owned: frozenset[str]
    generation: int


@dataclass(frozen=True)
class ResourceEmbedded:
    """The resources protocol for one member: what it may own and its weight."""

    resources: tuple[str, ...]
    weight: int = 1
    protocol_type: str = "resources"
    cooperative: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.weight <= 1000:
            raise ValueError(f"weight must be within 1..1000, not {self.weight}")
        if any(not name for name in self.resources):
            raise ValueError("resource names must not be empty")

    def protocols(
        self,
        owned: frozenset[TopicPartition],
        previous: tuple[TopicPartition, ...],
        generation: int,
    ) -> tuple[tuple[str, bytes], ...]:
        metadata = {
            "v": VERSION,
            "resources": sorted(set(self.resources)),
            "weight": self.weight,
            "owned": sorted(name for name, _ in owned),
            "generation": generation,
        }
        return ((PROTOCOL_NAME, json.dumps(metadata, sort_keys=True).encode()),)

    def topics_needed(
        self, protocol_name: str, members: Sequence[JoinGroupMember]
    ) -> frozenset[str]:
        return frozenset()  # resources need no cluster metadata

    def assign(
        self,
        protocol_name: str,
        members: Sequence[JoinGroupMember],
        partition_counts: Mapping[str, int],
    ) -> dict[str, bytes]:
        claims = [_claim(m) for m in members]
        shares = weighted_sticky(claims)
        if self.cooperative:
            shares = _withhold_moving(claims, shares)
        return {
            member_id: json.dumps({"v": VERSION, "resources": sorted(names)}).encode()
            for member_id, names in shares.items()
        }

    def decode(self, assignment: bytes) -> frozenset[TopicPartition]:
        if not assignment:
            return frozenset()
        data = _json(assignment, "assignment")
        return frozenset(item(str(name)) for name in data.get("resources", ()))


def weighted_sticky(claims: Sequence[_Claim]) -> dict[str, set[str]]:
    """Sticky assignment over weight slots, folded back per member."""
    slots: dict[str, MemberSubscription] = {}
    slot_owner: dict[str, str] = {}
    for claim in claims:
        owned = sorted(n for n in claim.owned if n in claim.resources)
        for slot in range(claim.weight):
            slot_id = f"{claim.member_id}\x00{slot:04d}"
            slot_owner[slot_id] = claim.member_id
            slots[slot_id] = MemberSubscription(
                topics=claim.resources,
                owned=tuple(item(n) for n in owned[slot :: claim.weight]),
                generation=claim.generation if claim.generation >= 0 else None,
                instance_id=None if claim.instance_id is None else f"{claim.instance_id}#{slot}",
            )
    universe = {name: 1 for claim in claims for name in claim.resources}
    result = registry.get("sticky").assign(GroupSpec(slots), StaticTopics(universe))
    shares: dict[str, set[str]] = {claim.member_id: set() for claim in claims}
    for slot_id, items in result.items():
        shares[slot_owner[slot_id]].update(name for name, _ in items)
    return shares


def _withhold_moving(claims: Sequence[_Claim], shares: dict[str, set[str]]) -> dict[str, set[str]]:
    """KIP-429's first round: nothing goes to a member while another member still claims it
    (the claim of the latest generation counts when two members claim one resource)."""
    holder: dict[str, tuple[int, str]] = {}
    for claim in claims:
        for name in claim.owned:
            if name not in holder or claim.generation > holder[name][0]:
                holder[name] = (claim.generation, claim.member_id)
    return {
        member_id: {n for n in names if n not in holder or holder[n][1] == member_id}
        for member_id, names in shares.items()
    }


def _json(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbeddedProtocolError(f"{what}: not JSON ({exc})") from None
    if not isinstance(value, dict) or not isinstance(value.get("v"), int):
        raise EmbeddedProtocolError(f"{what}: not a versioned object")
    return value


def _claim(member: JoinGroupMember) -> _Claim:
    data = _json(member.metadata, f"member {member.member_id}")
    weight = data.get("weight", 1)
    if not isinstance(weight, int) or weight < 1:
        raise EmbeddedProtocolError(f"member {member.member_id}: bad weight {weight!r}")
    return _Claim(
        member.member_id,
        member.group_instance_id,
        frozenset(map(str, data.get("resources", ()))),
        min(weight, 1000),
        frozenset(map(str, data.get("owned", ()))),
        int(data.get("generation", -1)),
    )


def names(items: Iterable[TopicPartition]) -> frozenset[str]:
    """Resource names of the member state machine's items."""
    return frozenset(name for name, _ in items)
