"""Small durable files of the data dir (a log start offset, the producer id block, a topic's
metadata) carry a CRC-32C of their content, so a changed byte is refused at start instead of
read as another, plausible value: a log start moved past acknowledged records, producer ids
handed out twice (a new producer's first batch then taken for an old one's retry and dropped),
a topic's partitions or configs changed.

A number is stored as `crc32c <value> <8 hex digits>` on one line. A file of a single bare
number, as earlier versions wrote, is still read: no single changed byte of a sealed line turns
it into one (that takes both spaces gone, and its first word is not a number). JSON carries the
CRC under the key `crc32c`, over the compact, key-sorted dump of everything else.
"""

from __future__ import annotations

import json
from typing import Any, Final

from crc32c import crc32c

MARK: Final = "crc32c"


class DamagedFileError(ValueError):
    """Content that fails its CRC or is not in the expected form."""


def seal_number(value: int) -> bytes:
    text = str(value)
    return f"{MARK} {text} {crc32c(text.encode('ascii')):08x}\n".encode("ascii")


def unseal_number(raw: bytes) -> int:
    """The number in `raw` (sealed, or a bare legacy number); `DamagedFileError` if damaged."""
    try:
        words = raw.decode("ascii").split()
    except UnicodeDecodeError:
        raise DamagedFileError("not ASCII text") from None
    if len(words) == 1 and words[0].isdigit():
        return int(words[0])
    if len(words) != 3 or words[0] != MARK or not words[1].isdigit():
        raise DamagedFileError(f"not a sealed number: {raw[:40]!r}")
    if f"{crc32c(words[1].encode('ascii')):08x}" != words[2]:
        raise DamagedFileError(f"CRC-32C mismatch for {words[1]}")
    return int(words[1])


def seal_json(value: dict[str, Any]) -> bytes:
    return json.dumps({**value, MARK: _json_crc(value)}).encode()


def unseal_json(raw: bytes) -> dict[str, Any]:
    """The object in `raw` (checked when it carries a CRC); `DamagedFileError` if damaged."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # bad UTF-8 or JSON
        raise DamagedFileError(str(exc)) from None
    if not isinstance(value, dict):
        raise DamagedFileError("not a JSON object")
    if MARK in value:
        stored = value.pop(MARK)
        if stored != _json_crc(value):
            raise DamagedFileError("CRC-32C mismatch")
    return value


def _json_crc(value: dict[str, Any]) -> str:
    return f"{crc32c(json.dumps(value, sort_keys=True, separators=(',', ':')).encode()):08x}"
