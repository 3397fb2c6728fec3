"""Offset and group rows: the fast encoders write exactly the bytes `json.dumps` wrote before
them (rows in existing stores and rows written now are the same), and they decode back to the
record."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given
from hypothesis import strategies as st

from coordinator.groups.record_codec import decode, encode, placed
from coordinator.groups.record_codec.classic import json_group_row
from coordinator.groups.record_codec.offsets import json_offset_row
from coordinator.groups.store.base import UNPLACED
from rebalance.classic.records import GroupMetadataRecord, GroupMetadataValue, MemberMetadataValue
from rebalance.client_balance import records as cb
from rebalance.records import OffsetAndMetadata, OffsetCommitRecord

# Any text, including quotes, backslashes, control characters, non-ASCII and astral characters.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
INTS = st.integers(min_value=-(2**70), max_value=2**70)


@given(
    TEXT,
    TEXT,
    INTS,
    st.none() | st.builds(OffsetAndMetadata, INTS, INTS, TEXT, INTS, st.none() | INTS),
)
def test_offset_rows_are_the_bytes_json_wrote(
    group: str, topic: str, partition: int, value: OffsetAndMetadata | None
) -> None:
    record = OffsetCommitRecord(group, topic, partition, value)
    row = encode(record)
    assert row == json_offset_row(record)
    if value is not None:
        assert decode(row) == record


def test_values_json_writes_otherwise_take_json() -> None:
    """A bool where an int belongs (json writes `true`, not `1`) and a str subclass fall back to
    `json.dumps`, so the bytes stay json's whatever the types."""

    class Name(str):
        pass

    odd = [
        OffsetCommitRecord("g", "t", True, None),
        OffsetCommitRecord(Name("g"), "t", 0, OffsetAndMetadata(1, -1, "", 5)),
        OffsetCommitRecord("g", "t", 0, OffsetAndMetadata(False, -1, "", 5, None)),
        OffsetCommitRecord("g", "t", 0, OffsetAndMetadata(1, -1, "", 5, True)),
    ]
    for record in odd:
        assert encode(record) == json_offset_row(record)


MEMBERS = st.builds(
    MemberMetadataValue,
    TEXT,
    st.none() | TEXT,
    TEXT,
    TEXT,
    INTS,
    INTS,
    st.binary(max_size=40),
    st.binary(max_size=40),
)


@given(
    TEXT,
    st.builds(
        GroupMetadataValue,
        st.none() | TEXT,
        INTS,
        st.none() | TEXT,
        st.none() | TEXT,
        INTS,
        st.lists(MEMBERS, max_size=4).map(tuple),
    ),
)
def test_group_rows_are_the_bytes_json_wrote(group_id: str, value: GroupMetadataValue) -> None:
    record = GroupMetadataRecord(group_id, value)
    row = encode(record)
    assert row == json_group_row(record)
    assert decode(row) == record


def test_group_values_json_writes_otherwise_take_json() -> None:
    """A bool generation or a str subclass in a member falls back to `json.dumps`."""

    class Name(str):
        pass

    member = MemberMetadataValue("m", None, "c", "/h", 1, 2, b"s", b"a")
    odd = [
        GroupMetadataValue("consumer", True, "range", "m", 0, (member,)),
        GroupMetadataValue(
            "consumer", 1, "range", "m", 0, (dataclasses.replace(member, member_id=Name("m")),)
        ),
    ]
    for value in odd:
        record = GroupMetadataRecord("g", value)
        assert encode(record) == json_group_row(record)


def test_a_client_balance_epoch_row_keeps_the_groups_source_count_and_topics() -> None:
    record = cb.ClientBalanceRecord("g", cb.GroupEpochValue(3, 2, ("t", "u")))
    row = encode(record)
    assert decode(row) == record
    # A row written before the group kept them decodes without (the first node's are used).
    older = dataclasses.replace(row, value=json.dumps({"v": 1, "epoch": 3}).encode())
    assert decode(older) == cb.ClientBalanceRecord("g", cb.GroupEpochValue(3))


def test_every_row_carries_its_groups_partition() -> None:
    """A cluster store fences rows by the `__consumer_offsets` partition of their group, so
    `placed` gives each row the partition the runtime's placement names, whichever encoder
    made it; a single-node store may leave it unset."""
    records = [
        OffsetCommitRecord("orders", "t", 0, OffsetAndMetadata(1, -1, "", 5)),
        OffsetCommitRecord("billing", "t", 1, None),
        GroupMetadataRecord("orders", None),
    ]
    partition_of = {"orders": 7, "billing": 41}
    assert encode(records[0]).partition == UNPLACED
    for encoder in (encode, lambda record: encode(record)):
        rows = placed(encoder, records, partition_of.__getitem__)
        assert [row.partition for row in rows] == [7, 41, 7]
        assert [dataclasses.replace(row, partition=UNPLACED) for row in rows] == [
            encode(r) for r in records
        ]
