"""Core records <-> stored rows: one codec module per group type, registered by record class.

The store keeps rows `(kind, key, value)` with last-write-wins per `(kind, key)` and deletes on
a tombstone (value None). Each codec module names the record class it writes (`RECORD_CLASS`)
and the row kind it reads (`KIND`), as each group type names its record class for replay:

* `offsets`         offset commits, keyed by (group, topic, partition), every type's;
* `classic`         classic group metadata, keyed by group id;
* `consumer_group`  KIP-848 rows, keyed by (group, record kind, member id or "");
* `client_balance`  client-balance rows, keyed by (group, record kind, name).

Adding a group type adds its module and one entry in `CODECS`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from coordinator.groups.record_codec import classic, client_balance, consumer_group, offsets
from coordinator.groups.record_codec.base import VALUE_VERSION, RecordFormatError
from coordinator.groups.store.base import StoredRecord
from rebalance.records import OffsetCommitRecord, Record

#: The codec of every record class the core writes.
CODECS: tuple[ModuleType, ...] = (offsets, classic, consumer_group, client_balance)

ENCODERS: dict[type[Any], Callable[[Any], StoredRecord]] = {
    c.RECORD_CLASS: c.encode for c in CODECS
}
DECODERS: dict[str, Callable[[StoredRecord], Record]] = {c.KIND: c.decode for c in CODECS}

__all__ = ["CODECS", "VALUE_VERSION", "RecordFormatError", "decode", "encode"]

_encode_offset = offsets.encode


def encode(record: Record) -> StoredRecord:
    if type(record) is OffsetCommitRecord:  # the common row first: one per committed offset
        return _encode_offset(record)
    encoder = ENCODERS.get(type(record))
    if encoder is None:
        raise TypeError(f"no codec for {type(record).__name__}")
    return encoder(record)


def decode(row: StoredRecord) -> Record:
    decoder = DECODERS.get(row.kind)
    if decoder is None:
        raise RecordFormatError(f"unknown row kind {row.kind!r} (key {row.key!r})")
    try:
        return decoder(row)
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordFormatError(f"unreadable {row.kind} row {row.key!r}: {exc}") from exc
