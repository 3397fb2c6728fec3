"""The fixed 61-byte header of a Kafka v2 RecordBatch (magic 2), as stored and served.

The server never re-encodes records: a producer's batch is stored byte for byte, except for the
first 8 bytes (base offset), which the server assigns. The batch CRC-32C covers only the bytes
from `attributes` to the end of the batch, so rewriting the base offset (and the partition leader
epoch before it) keeps the CRC valid. Compressed batches are handled the same way because the
CRC covers the compressed bytes.

Layout (big-endian): base_offset i64 @0, batch_length i32 @8 (bytes after this field),
partition_leader_epoch i32 @12, magic i8 @16, crc u32 @17, attributes i16 @21,
last_offset_delta i32 @23, base_timestamp i64 @27, max_timestamp i64 @35, producer_id i64 @43,
producer_epoch i16 @51, base_sequence i32 @53, record_count i32 @57.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

HEADER_SIZE: Final = 61
LENGTH_PREFIX_SIZE: Final = 12  # base_offset + batch_length
CRC_START: Final = 21
MAGIC_V2: Final = 2
_HEAD: Final = struct.Struct(">qiibI")
_TAIL: Final = struct.Struct(">hiqqqhii")
_BASE_OFFSET: Final = struct.Struct(">q")


class InvalidBatchError(ValueError):
    """Bytes that are not a complete, intact v2 record batch."""


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What the log needs to know about one stored batch."""

    base_offset: int
    size: int
    """Total bytes of the batch, header included."""
    last_offset_delta: int
    record_count: int
    max_timestamp: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    """Idempotent producers number their batches; -1 when the producer is not idempotent."""

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    def at(self, base_offset: int) -> BatchInfo:
        """The same batch placed at another base offset."""
        return dataclasses.replace(self, base_offset=base_offset)


def parse_batch(data: bytes | memoryview, position: int = 0) -> BatchInfo:
    """Validate the batch starting at `position` (length, magic, CRC) and describe it."""
    available = len(data) - position
    if available < HEADER_SIZE:
        raise InvalidBatchError(f"batch header needs {HEADER_SIZE} bytes, {available} present")
    base_offset, batch_length, _epoch, magic, crc = _HEAD.unpack_from(data, position)
    size = LENGTH_PREFIX_SIZE + batch_length
    if magic != MAGIC_V2:
        raise InvalidBatchError(f"record batch magic {magic} is not supported (need 2)")
    if size < HEADER_SIZE:
        raise InvalidBatchError(f"batch length {batch_length} is shorter than a batch header")
    if size > available:
        raise InvalidBatchError(f"batch of {size} bytes but only {available} present")
    # Imported at the first batch: the package also loads its command line and its metadata
    # (0.5 MB of memory) that a node serving only consumer groups never needs.
    from crc32c import crc32c

    actual = crc32c(memoryview(data)[position + CRC_START : position + size])
    if actual != crc:
        raise InvalidBatchError(f"batch CRC mismatch (stored {crc:#010x}, computed {actual:#010x})")
    _attrs, last_delta, _base_ts, max_ts, pid, pepoch, sequence, count = _TAIL.unpack_from(
        data, position + CRC_START
    )
    if last_delta < 0 or count < 0:
        raise InvalidBatchError(f"negative last_offset_delta {last_delta} or count {count}")
    return BatchInfo(base_offset, size, last_delta, count, max_ts, pid, pepoch, sequence)


def iter_batches(records: bytes) -> Iterator[tuple[BatchInfo, bytes]]:
    """Split a Produce request's record set into validated batches."""
    position = 0
    while position < len(records):
        info = parse_batch(records, position)
        yield info, records[position : position + info.size]
        position += info.size


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    """The same batch with the server-assigned base offset (CRC unaffected, see module doc)."""
    return _BASE_OFFSET.pack(base_offset) + batch[_BASE_OFFSET.size :]
