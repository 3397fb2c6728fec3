"""What a kio field's annotation says: its type, whether it is nullable, its zero value.

Shared by `codec.build_response` (which fills a version's dataclass from a dict) and
`fast_encode` (which generates the same filling as code), so both agree on every field.
"""

from __future__ import annotations

import types
import typing
import uuid
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero
from kio.static.primitive import Records, i32Timedelta, i64Timedelta


def split_optional(annotation: Any) -> tuple[Any, bool]:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        return args[0], nullable
    return annotation, False


def zero_value(kind: Any) -> Any:
    if not isinstance(kind, type):
        return None
    if issubclass(kind, ErrorCode):
        return ErrorCode.none
    if issubclass(kind, i32Timedelta | i64Timedelta | timedelta):
        return timedelta(0)
    if kind is uuid.UUID:
        return uuid_zero
    if issubclass(kind, bool):
        return False
    if issubclass(kind, Records | bytes):
        return b""
    if issubclass(kind, str):
        return ""
    if issubclass(kind, int):
        return 0
    if issubclass(kind, float):
        return 0.0
    return None
