"""Core records <-> stored rows: one codec module per group type, registered by record class.

The store keeps rows `(kind, key, value)` with last-write-wins per `(kind, key)` and deletes on
a tombstone (value None). Each codec module names the record class it writes (`RECORD_CLASS`)
and the row kind it reads (`KIND`), as each group type names its record class for replay:

* `offsets`         offset commits, keyed by (group, topic, partition), every type's;
* `classic`         classic group metadata, keyed by group id;
* `consumer_group`  KIP-848 rows, keyed by (group, record kind, member id or "");
* `client_balance`  client-balance rows, keyed by (group, record kind, name).

Adding a group type adds its module and one entry in `CODECS`. Every row carries the
`__consumer_offsets` partition of its group (`encode(record, partition)`; `placed` does it for
a batch), which a cluster store fences by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from coordinator.groups.record_codec import classic, client_balance, consumer_group, offsets
from coordinator.groups.record_codec.base import VALUE_VERSION, RecordFormatError
from coordinator.groups.store.base import UNPLACED, StoredRecord
from rebalance.records import OffsetCommitRecord, Record

#: The codec of every record class the core writes.
CODECS: tuple[ModuleType, ...] = (offsets, classic, consumer_group, client_balance)

ENCODERS: dict[type[Any], Callable[[Any, int], StoredRecord]] = {
    c.RECORD_CLASS: c.encode for c in CODECS
}
DECODERS: dict[str, Callable[[StoredRecord], Record]] = {c.KIND: c.decode for c in CODECS}

__all__ = ["CODECS", "VALUE_VERSION", "RecordFormatError", "decode", "encode", "placed"]

_encode_offset = offsets.encode


def encode(record: Record, partition: int = UNPLACED) -> StoredRecord:
    if type(record) is OffsetCommitRecord:  # the common row first: one per committed offset
        return _encode_offset(record, partition)
    encoder = ENCODERS.get(type(record))
    if encoder is None:
        raise TypeError(f"no codec for {type(record).__name__}")
    return encoder(record, partition)


def placed(
    encoder: Callable[[Record], StoredRecord],
    records: Iterable[Record],
    partition_for: Callable[[str], int],
) -> list[StoredRecord]:
    """The rows of `records` by `encoder` (`encode`, or another that gives the same rows), each
    with its group's partition (`partition_for(group_id)`)."""
    if encoder is encode:  # the usual case: the partition given to the codec, one row a record
        return [encode(r, partition_for(r.group_id)) for r in records]
    rows = []
    for record in records:
        row = encoder(record)
        rows.append(StoredRecord(row.kind, row.key, row.value, partition_for(record.group_id)))
    return rows


def decode(row: StoredRecord) -> Record:
    decoder = DECODERS.get(row.kind)
    if decoder is None:
        raise RecordFormatError(f"unknown row kind {row.kind!r} (key {row.key!r})")
    try:
        return decoder(row)
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordFormatError(f"unreadable {row.kind} row {row.key!r}: {exc}") from exc
