"""The event log's frames, `marshal`led in slices so that no single call holds the GIL for long.

`marshal.dumps` is one C call: for a KIP-848 `target_assignment` event of 10,000 members over a
million partitions it runs long (`benchmarks/bench_event_log_stall.py`, RESULTS.md), and while it
runs no other thread, the event loop's included, can do anything — every connection of the node
stalls for that long. Here each event is
marshalled apart, and a field holding a large collection (more than `SLICE_ENTRIES` entries, or
entries that are collections themselves) is marshalled a slice of entries at a time, each slice
a few milliseconds of work, with the collection's header written by hand. Between two slices
the interpreter can hand the GIL to the loop.

The pieces are written in marshal's format version 2, which has no back-references: pieces
marshalled apart then concatenate into one valid stream, byte for byte what
`marshal.dumps(value, 2)` writes for the whole (`tests/coordinator/groups/test_event_frames.py`).
The writer reads it with `marshal.loads`, which reads every version.
"""

from __future__ import annotations

import marshal
import struct
from collections.abc import Sequence
from typing import Any

VERSION = 2
"""No back-references (those came with version 3), so separately marshalled pieces concatenate."""

SLICE_WORK = 20_000
"""About how many values one `marshal.dumps` call may write: a few milliseconds."""

RECORD_LENGTH = 4
"""Tuples up to this long are records, whose entries are not alike."""

_LENGTH = struct.Struct("<i")
_LIST_HEADER = 5  # type code + int32 length
_DICT_END = b"0"


def dumps(batches: list[Any]) -> bytearray:
    """`marshal.dumps(batches, 2)`, written event by event and large fields slice by slice.

    `batches` is the event log's frame: a list of `(offset, events)` pairs, each event a tuple
    `(type, ts, group, generation, member, fields)`.
    """
    out = bytearray(b"[" + _LENGTH.pack(len(batches)))
    for offset, events in batches:
        out += b"(" + _LENGTH.pack(2)
        out += marshal.dumps(offset, VERSION)
        out += b"[" + _LENGTH.pack(len(events))
        for event in events:
            *head, fields = event
            out += b"(" + _LENGTH.pack(len(event))
            for value in head:
                out += marshal.dumps(value, VERSION)
            _dump_fields(fields, out)
    return out  # not copied into `bytes`: 16 MB copied in one call holds the GIL too


def _dump_fields(fields: dict[str, Any], out: bytearray) -> None:
    if all(_work(value) <= SLICE_WORK for value in fields.values()):
        out += marshal.dumps(fields, VERSION)
        return
    out += b"{"
    for key, value in fields.items():
        out += marshal.dumps(key, VERSION)
        _dump_collection(value, out)
    out += _DICT_END


def _dump_collection(value: Any, out: bytearray) -> None:
    """A field's value: whole if it is small, else its entries a slice at a time."""
    size = _work(value)
    if size <= SLICE_WORK:
        out += marshal.dumps(value, VERSION)
        return
    per_entry = max(1, size // len(value))
    step = max(1, SLICE_WORK // per_entry)
    if type(value) is dict:
        items = list(value.items())
        out += b"{"
        for start in range(0, len(items), step):
            # A dict's pairs, without the dict's type code and end mark.
            out += marshal.dumps(dict(items[start : start + step]), VERSION)[1:-1]
        out += _DICT_END
        return
    sequence: Sequence[Any] = value
    out += (b"[" if type(value) is list else b"(") + _LENGTH.pack(len(sequence))
    for start in range(0, len(sequence), step):
        # A list's entries, without the list's type code and length.
        out += marshal.dumps(list(sequence[start : start + step]), VERSION)[_LIST_HEADER:]


def _work(value: Any) -> int:
    """About how many values `value` holds, judged from its length and its first entry's (a
    field's large collections are uniform: every member's assignment has the same shape); short
    tuples are records (`(topic, partitions)`), counted entry by entry."""
    kind = type(value)
    if kind is dict:
        if not value:
            return 1
        first = next(iter(value.values()))
        return len(value) * (1 + _work(first))
    if kind is tuple and len(value) <= RECORD_LENGTH:  # a record: its fields differ
        return 1 + sum(_work(entry) for entry in value)
    if kind is list or kind is tuple:
        if not value:
            return 1
        return len(value) * (1 + _work(value[0]))
    return 1
