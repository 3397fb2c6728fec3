"""The KIP-848 member ids a differential run gives its consumer-group slots.

A KIP-848 member id is the client's, so both sides see the same ids; what may still differ is
the order in which each side's assignor visits the members, which decides ties (two members
with equally few partitions, one partition for either). Kafka's uniform assignor visits them in
`HashMap` order (`TargetAssignmentBuilder` collects the members into a `HashMap`, 16 buckets for
a small group): by bucket, the bucket being the low bits of `h ^ (h >>> 16)` of the id's
`String.hashCode`. The model visits static members first (by instance id), then the others by
member id (`assignors.spec.member_order_key`). Each slot's id is chosen so the two orders are
the same, as the leader Kafka picks from its hash map is adopted for classic groups: both are
Kafka's arbitrary choices, not rules.
"""

from __future__ import annotations

import uuid

from assignors.seeds import java_string_hash
from coordinator.conformance.steps import CONSUMER_SLOTS, instance_of

#: Buckets of the smallest `HashMap` tables the ids keep apart and in order (64 and below).
BUCKET_BITS = 0x3F


def java_hash_map_bucket_bits(key: str) -> int:
    """`HashMap.hash(key)`: the spread hash whose low bits pick the key's bucket."""
    h = java_string_hash(key)
    return (h ^ (h >> 16)) & 0xFFFFFFFF


def consumer_member_ids(group_id: str) -> dict[str, str]:
    """An id per consumer slot, UUID-shaped and fixed by `group_id`: a slot's first hex digit is its
    place among the dynamic slots (the model orders those by member id), and the low bits of
    its spread hash are its place in the model's order (static slots first), so a Java
    `HashMap` of up to 64 buckets iterates them in that order too."""
    slots = list(CONSUMER_SLOTS)
    static = [s for s in slots if instance_of(s)]
    ordered = static + [s for s in slots if s not in static]
    ids = {}
    for place, slot in enumerate(ordered):
        for attempt in range(1_000_000):
            base = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{group_id}/{slot}/{attempt}"))
            candidate = f"{slots.index(slot):x}{base[1:]}"
            if java_hash_map_bucket_bits(candidate) & BUCKET_BITS == place:
                ids[slot] = candidate
                break
    return ids
