"""Offset rows: the fast encoder writes exactly the bytes `json.dumps` wrote before it (rows in
existing stores and rows written now are the same), and they decode back to the record."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from coordinator.record_codec import OFFSET_KIND, VALUE_VERSION, decode, encode
from coordinator.store.base import StoredRecord
from rebalance.records import OffsetAndMetadata, OffsetCommitRecord

# Any text, including quotes, backslashes, control characters, non-ASCII and astral characters.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
INTS = st.integers(min_value=-(2**70), max_value=2**70)


def json_row(record: OffsetCommitRecord) -> StoredRecord:
    """The row as `record_codec` wrote it with `json.dumps` (the reference)."""
    key = json.dumps([record.group_id, record.topic, record.partition], ensure_ascii=False)
    value = record.value
    if value is None:
        return StoredRecord(OFFSET_KIND, key, None)
    body = {
        "v": VALUE_VERSION,
        "offset": value.offset,
        "leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "commit_ts": value.commit_timestamp_ms,
        "expire_ts": value.expire_timestamp_ms,
    }
    return StoredRecord(OFFSET_KIND, key, json.dumps(body).encode())


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
    assert row == json_row(record)
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
        assert encode(record) == json_row(record)
