"""What every record codec shares: the row format's version, its error, and reading a value.

Values are versioned JSON: easy to inspect with `sqlite3`, and a row written by a newer release
fails with a clear error instead of being misread.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from coordinator.groups.store.base import StoredRecord

VALUE_VERSION = 1


class RecordFormatError(ValueError):
    """A stored row that this release cannot read (corrupt, or written by a newer one)."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def versioned(row: StoredRecord) -> dict[str, Any]:
    assert row.value is not None
    value = json.loads(row.value)
    if not isinstance(value, dict):
        raise RecordFormatError(f"{row.kind} row {row.key!r} is not an object")
    version = value.get("v")
    if version != VALUE_VERSION:
        raise RecordFormatError(
            f"{row.kind} row {row.key!r} has value version {version!r}; this release reads "
            f"version {VALUE_VERSION} (written by a newer release?)"
        )
    return value
