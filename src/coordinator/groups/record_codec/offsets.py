"""Offset commit rows, keyed by (group, topic, partition): the rows every group type shares."""

from __future__ import annotations

import json
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from coordinator.groups.record_codec.base import VALUE_VERSION, versioned
from coordinator.groups.store.base import UNPLACED, StoredRecord
from rebalance.records import OffsetAndMetadata, OffsetCommitRecord

KIND = "offset"
RECORD_CLASS = OffsetCommitRecord


def encode(record: OffsetCommitRecord, partition: int = UNPLACED) -> StoredRecord:
    fast = _offset_row(record, partition)
    return fast if fast is not None else json_offset_row(record, partition)


def json_offset_row(record: OffsetCommitRecord, partition: int = UNPLACED) -> StoredRecord:
    """An offset's row written by `json.dumps`: the format's definition, which `_offset_row`
    reproduces byte for byte (and falls back to for values it does not handle)."""
    key = json.dumps([record.group_id, record.topic, record.partition], ensure_ascii=False)
    offset = record.value
    if offset is None:
        return StoredRecord(KIND, key, None, partition)
    value: dict[str, Any] = {
        "v": VALUE_VERSION,
        "offset": offset.offset,
        "leader_epoch": offset.leader_epoch,
        "metadata": offset.metadata,
        "commit_ts": offset.commit_timestamp_ms,
        "expire_ts": offset.expire_timestamp_ms,
    }
    return StoredRecord(KIND, key, json.dumps(value).encode(), partition)


def _offset_row(record: OffsetCommitRecord, partition: int = UNPLACED) -> StoredRecord | None:
    """The row `encode` writes for an offset, built without `json.dumps` (a commit makes one
    row per partition, and `json.dumps` was most of its cost): the same bytes,
    from the same C string escapers `json` uses (`ensure_ascii=False` for the key, the default
    for the value) and `int.__repr__`. None for a value of any other type than `json` would
    write the same way (then `json_offset_row` is used)."""
    group_id, topic, topic_partition, offset = (
        record.group_id,
        record.topic,
        record.partition,
        record.value,
    )
    if type(group_id) is not str or type(topic) is not str or type(topic_partition) is not int:
        return None
    key = f"[{encode_basestring(group_id)}, {encode_basestring(topic)}, {topic_partition!r}]"
    if offset is None:
        return StoredRecord(KIND, key, None, partition)
    position, epoch, metadata = offset.offset, offset.leader_epoch, offset.metadata
    stamp, expire = offset.commit_timestamp_ms, offset.expire_timestamp_ms
    if (
        type(position) is not int
        or type(epoch) is not int
        or type(metadata) is not str
        or type(stamp) is not int
        or (expire is not None and type(expire) is not int)
    ):
        return None
    value = (
        f'{{"v": {VALUE_VERSION}, "offset": {position!r}, "leader_epoch": {epoch!r}, '
        f'"metadata": {encode_basestring_ascii(metadata)}, "commit_ts": {stamp!r}, '
        f'"expire_ts": {"null" if expire is None else repr(expire)}}}'
    )
    return StoredRecord(KIND, key, value.encode(), partition)


def decode(row: StoredRecord) -> OffsetCommitRecord:
    group_id, topic, partition = json.loads(row.key)
    if row.value is None:
        return OffsetCommitRecord(group_id, topic, partition, None)
    v = versioned(row)
    return OffsetCommitRecord(
        group_id,
        topic,
        partition,
        OffsetAndMetadata(
            v["offset"], v["leader_epoch"], v["metadata"], v["commit_ts"], v["expire_ts"]
        ),
    )
