"""The iteration order of Scala 2.10's maps, which fixes the key order of Kafka 0.8's JSON.

Kafka 0.8.2 is built with Scala 2.10.4 and writes its znodes with `kafka.utils.Json.encode`,
which emits a map's entries in the map's iteration order:

* `Map(k1 -> v1, ..., k4 -> v4)` (up to four entries) keeps insertion order (`Map1`..`Map4`);
* with more entries it is an `immutable.HashMap`, a hash trie iterated by the *improved* hash
  of each key, five bits at a time from the lowest (`HashTrieMap`): `jmx_port, timestamp, host,
  version, port` for a broker registration;
* `mutable.HashMap` (the replica assignment `AdminUtils` builds) iterates its 16 buckets from
  the last to the first, each bucket newest entry first, the bucket being the top bits of a
  byte-swapped multiplicative hash (`HashTable.index`).

Checked against what real 0.8 clusters hold: `{"version":1,"partitions":{"8":[0],"4":[0],
"9":[0],"5":[0],"6":[0],"1":[0],"0":[0],"2":[0],"7":[0],"3":[0]}}` for ten partitions and
`{"1":..,"0":..}` for two.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

MASK32 = 0xFFFFFFFF
SMALL_MAP_MAX = 4
"""`Map1`..`Map4` keep insertion order; a fifth entry turns the map into a `HashMap`."""
MUTABLE_INITIAL_BUCKETS = 16
MUTABLE_LOAD_FACTOR_PER_MILLE = 750
MUTABLE_SEED = 4
"""`HashTable.seedvalue`: bitCount(15) for the initial 16 buckets, never updated on resize."""


def _signed(value: int) -> int:
    value &= MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def java_hash_code(key: object) -> int:
    """`key.##` as a signed 32-bit int: `String.hashCode` for strings, the value for ints."""
    if isinstance(key, bool):
        raise TypeError("boolean keys are not used by Kafka's znodes")
    if isinstance(key, int):
        return _signed(key)
    if isinstance(key, str):
        h = 0
        data = key.encode("utf-16-be", "surrogatepass")
        for k in range(0, len(data), 2):
            h = (31 * h + ((data[k] << 8) | data[k + 1])) & MASK32
        return _signed(h)
    raise TypeError(f"no Java hash code for {type(key).__name__}")


def _immutable_improve(hcode: int) -> int:
    """`immutable.HashMap.improve` (Scala 2.10), as an unsigned 32-bit value."""
    h = _signed(hcode + ~_signed(hcode << 9))
    h = _signed(h ^ ((h & MASK32) >> 14))
    h = _signed(h + _signed(h << 4))
    return (h ^ ((h & MASK32) >> 10)) & MASK32


def _trie_position(key: object) -> tuple[int, ...]:
    improved = _immutable_improve(java_hash_code(key))
    return tuple((improved >> level) & 0x1F for level in range(0, 35, 5))


def immutable_map_order(keys: Sequence[K]) -> list[K]:
    """Iteration order of an immutable `Map` built from `keys` in this insertion order."""
    if len(keys) <= SMALL_MAP_MAX:
        return list(keys)
    # Equal positions mean a full 32-bit collision (a `HashMapCollision1`, insertion order).
    return sorted(keys, key=_trie_position)


def _byteswap32(value: int) -> int:
    hc = (value * 0x9E3775CD) & MASK32
    hc = int.from_bytes(hc.to_bytes(4, "big"), "little")
    return (hc * 0x9E3775CD) & MASK32


def _bucket(key: object, buckets: int) -> int:
    """`HashTable.index`: the top log2(buckets) bits of the rotated, byte-swapped hash."""
    ones = buckets - 1
    swapped = _byteswap32(java_hash_code(key) & MASK32)
    rotated = ((swapped >> MUTABLE_SEED) | (swapped << (32 - MUTABLE_SEED))) & MASK32
    return (_signed(rotated) >> (32 - ones.bit_count())) & ones


def mutable_map_order(keys: Iterable[K]) -> list[K]:
    """Iteration order of a new `mutable.HashMap` after inserting `keys` in this order.

    Models `HashTable` exactly: an entry is prepended to its bucket's chain; past the threshold
    (75% of the buckets) the table doubles and the old buckets are relinked from the last to
    the first, each chain from its head; iteration runs from the last bucket to the first.
    """
    table: list[list[K]] = [[] for _ in range(MUTABLE_INITIAL_BUCKETS)]
    size = 0
    for key in keys:
        if any(key in chain for chain in table):
            continue
        table[_bucket(key, len(table))].insert(0, key)
        size += 1
        if size > len(table) * MUTABLE_LOAD_FACTOR_PER_MILLE // 1000:
            bigger: list[list[K]] = [[] for _ in range(2 * len(table))]
            for chain in reversed(table):
                for entry in chain:
                    bigger[_bucket(entry, len(bigger))].insert(0, entry)
            table = bigger
    return [key for chain in reversed(table) for key in chain]
