"""Coordinator placement: `Utils.abs(String.hashCode()) % N` (spec §4 and its test vectors)."""

from __future__ import annotations

import math

import pytest

import rebalance
from rebalance.placement import java_string_hash, kafka_abs, partition_for

VECTORS = [
    ("my-group", -1906497762, 12),
    ("test-group", 627841412, 12),
    ("consumer-group-1", 147483020, 20),
    ("connect-cluster", 1440343063, 13),
    ("groupId", 293428218, 18),
    ("otherGroup", -204443313, 13),
    ("grüppe", -1233264812, 12),
    ("日本語グループ", -305235731, 31),
    ("消费者组", 871131088, 38),
    ("grp-😀", -1235730613, 13),  # a supplementary character: two UTF-16 surrogate units
    ("polygenelubricants", -2147483648, 0),  # hashCode == Integer.MIN_VALUE
    ("GydZG_", -2147483648, 0),
    ("", 0, 0),
]


@pytest.mark.parametrize(("group_id", "hash_code", "partition"), VECTORS)
def test_java_hash_and_partition(group_id: str, hash_code: int, partition: int) -> None:
    assert java_string_hash(group_id) == hash_code
    assert partition_for(group_id) == partition
    assert rebalance.partition_for(group_id, partitions=50) == partition


def test_min_value_maps_to_zero_where_naive_abs_would_not() -> None:
    h = java_string_hash("polygenelubricants")
    assert h == -(2**31)
    assert kafka_abs(h) == 0
    # Java's Math.abs(MIN_VALUE) stays MIN_VALUE and `%` keeps the dividend's sign: -48.
    assert math.fmod(h, 50) == -48
    assert partition_for("polygenelubricants") == 0


def test_partition_count_is_respected() -> None:
    assert partition_for("my-group", partitions=1) == 0
    assert partition_for("my-group", partitions=7) == 1906497762 % 7
    with pytest.raises(ValueError, match="positive"):
        partition_for("my-group", partitions=0)
