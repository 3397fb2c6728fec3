"""Coordinator placement: which `__consumer_offsets` partition owns a group.

Kafka computes `Utils.abs(groupId.hashCode()) % N`. Two details make a naive port wrong:
Java's `String.hashCode` runs over UTF-16 code units (a character outside the BMP contributes two
surrogates), and `Utils.abs` maps `Integer.MIN_VALUE` to 0 where `Math.abs` would stay negative
("polygenelubricants" hashes to MIN_VALUE and lives on partition 0, not -48).
"""

from __future__ import annotations

_MASK32 = 0xFFFFFFFF
_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: `h = 31*h + unit` over UTF-16 code units, as a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's `Utils.abs`: absolute value, except that `Integer.MIN_VALUE` maps to 0."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, partitions: int = 50) -> int:
    """The `__consumer_offsets` partition whose leader coordinates `group_id`.

    >>> partition_for("my-group")
    12
    >>> partition_for("polygenelubricants")
    0
    """
    if partitions <= 0:
        raise ValueError(f"partitions must be positive, got {partitions}")
    return kafka_abs(java_string_hash(group_id)) % partitions
