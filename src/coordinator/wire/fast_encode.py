"""Response bodies encoded by code generated from kio's schema classes.

kio writes an entity field by field through a chain of small functions (one `struct.pack` and one
`BytesIO.write` per primitive, a closure per array): for a JoinGroup leader's answer with a
thousand members that is tens of thousands of calls. This module reads the same schema kio's
writer reads (each dataclass field's `kafka_type` and `tag` metadata, its nullability, the
class's `__flexible__`), and generates one Python function per entity class that appends to a
`bytearray`, packing each run of fixed-width fields with a single precompiled `struct.Struct`.
Nothing is written per message by hand: a new API or version gets its encoder from its kio
class. The rules are kio's (`kio.serial._serialize`): compact strings/bytes/arrays carry
length + 1 (0 for null) in flexible versions, int16/int32 lengths (-1 for null) otherwise,
nullable structs a -1/1 marker (KIP-893), uuids null as zero, and tagged fields are written only
when they differ from their default; a present tagged field is written by kio's own field writer
(rare: none of our responses sets one on the hot path).

`values_encoder` generates, from the same schema, an encoder that reads the version-agnostic dict
an API handler returns (`coordinator.wire.codec.build_response`'s input) instead of the kio
dataclass built from it: the same rules (keys the version lacks ignored, a missing key takes the
field's default, `None` in a field that is not nullable in this version its zero value, ints for
error codes and durations), without building an object per response and per nested entity. A
nested value that is already a kio entity is written by the entity encoder. Classes with tagged
fields are left to `build_response` and `encoder` (`UnsupportedSchema`).

`tests/coordinator/wire/test_fast_encode.py` checks, for every response version the server
advertises, that the bytes are identical to kio's and decode with kio to the same response, and
that a dict written by `values_encoder` gives the bytes of the response `build_response` makes
from it.
"""

from __future__ import annotations

import io
import struct
import typing
import uuid
from collections.abc import Callable
from dataclasses import MISSING, Field, fields, is_dataclass
from datetime import timedelta
from functools import cache
from typing import Any

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.serial._serialize import get_field_writer
from kio.serial.writers import write_tagged_field
from kio.static.constants import uuid_zero

from coordinator.wire.field_types import split_optional, zero_value

Encoder = Callable[[Any], bytes]

#: kafka_type -> (struct code, expression of the value `{v}` to pack), for fixed-width fields.
_FIXED: dict[str, tuple[str, str]] = {
    "int8": ("b", "{v}"),
    "int16": ("h", "{v}"),
    "int32": ("i", "{v}"),
    "int64": ("q", "{v}"),
    "uint8": ("B", "{v}"),
    "uint16": ("H", "{v}"),
    "uint32": ("I", "{v}"),
    "uint64": ("Q", "{v}"),
    "float64": ("d", "{v}"),
    "bool": ("?", "{v}"),
    "error_code": ("h", "{v}.value"),
    "timedelta_i32": ("i", "round({v}.total_seconds() * 1000)"),
    "timedelta_i64": ("q", "round({v}.total_seconds() * 1000)"),
    "datetime_i64": ("q", "round({v}.timestamp() * 1000)"),
    "uuid": ("16s", "_uuid_bytes({v})"),
}


class UnsupportedSchema(TypeError):
    """A field kind the generator does not know (kio's writer is used for that class)."""


def encoder(cls: type[Any]) -> Encoder:
    """The generated encoder of a kio entity class: entity -> its body bytes."""
    built: Encoder = _build(typing.cast(Any, cls))
    return built


@cache
def _build(cls: Any) -> Encoder:
    generator = _Generator()
    entry = generator.entity_function(cls)
    source = "\n".join(generator.lines)
    namespace: dict[str, Any] = dict(generator.constants)
    exec(compile(source, f"<fast_encode {cls.__module__}.{cls.__qualname__}>", "exec"), namespace)
    write = namespace[entry]

    def encode(entity: Any) -> bytes:
        out = bytearray()
        write(entity, out)
        return bytes(out)

    encode.__qualname__ = f"encode_{cls.__qualname__}"
    return encode


def values_encoder(cls: type[Any]) -> Encoder:
    """The generated encoder of a kio entity class from a version-agnostic dict (see the module
    docstring); raises `UnsupportedSchema` for classes with tagged fields."""
    built: Encoder = _build_values(typing.cast(Any, cls))
    return built


ValuesWriter = Callable[[Any, bytearray], None]


def values_writer(cls: type[Any]) -> ValuesWriter:
    """What `values_encoder` calls: it appends the body written from a dict to a `bytearray`
    (for a caller that puts the frame's length and header in front of it in the same array);
    raises `UnsupportedSchema` for classes with tagged fields."""
    built: ValuesWriter = _build_values_writer(typing.cast(Any, cls))
    return built


@cache
def _build_values_writer(cls: Any) -> ValuesWriter:
    generator = _ValuesGenerator()
    entry = generator.entity_function(cls)
    source = "\n".join(generator.lines)
    namespace: dict[str, Any] = dict(generator.constants)
    name = f"<fast_encode values {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, name, "exec"), namespace)
    write: ValuesWriter = namespace[entry]
    return write


@cache
def _build_values(cls: Any) -> Encoder:
    write = _build_values_writer(cls)

    def encode(values: Any) -> bytes:
        out = bytearray()
        write(values, out)
        return bytes(out)

    encode.__qualname__ = f"encode_values_{cls.__qualname__}"
    return encode


def _uvarint(value: int) -> bytes:
    """Kafka's unsigned varint (7 bits a byte, low first), as kio writes it."""
    if value < 0x80:
        return _SMALL_VARINTS[value]
    parts = bytearray()
    while value >= 0x80:
        parts.append((value & 0x7F) | 0x80)
        value >>= 7
    parts.append(value)
    return bytes(parts)


_SMALL_VARINTS = [bytes([n]) for n in range(0x80)]


def _uuid_bytes(value: uuid.UUID | None) -> bytes:
    return uuid_zero.bytes if value is None else value.bytes


def _uuid_any(value: uuid.UUID | str | None) -> bytes:
    """A dict's uuid (a `UUID`, its text, or None for the zero uuid) as 16 bytes."""
    if value is None:
        return uuid_zero.bytes
    return (value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))).bytes


def _millis(value: Any) -> int:
    """A dict's duration (int milliseconds or a `timedelta`) in milliseconds."""
    if value.__class__ is int:
        return int(value)
    if isinstance(value, timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def _compact(out: bytearray, value: str | bytes) -> None:
    data = value.encode() if isinstance(value, str) else value
    out += _uvarint(len(data) + 1)
    out += data


def _compact_nullable(out: bytearray, value: str | bytes | None) -> None:
    if value is None:
        out += b"\x00"
    else:
        _compact(out, value)


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _legacy_string(out: bytearray, value: str) -> None:
    if value is None:
        raise TypeError("Unexpectedly received None value")
    data = value.encode()
    out += _I16.pack(len(data))  # struct.error past 32767, as kio refuses it too
    out += data


def _legacy_string_nullable(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
    else:
        _legacy_string(out, value)


def _legacy_bytes(out: bytearray, value: bytes) -> None:
    if value is None:
        raise TypeError("Unexpectedly received None value")
    out += _I32.pack(len(value))
    out += value


def _legacy_bytes_nullable(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        _legacy_bytes(out, value)


def _tagged(out: bytearray, entity: Any, plans: tuple[tuple[Any, ...], ...]) -> None:
    """The tagged-field section of a flexible entity, by kio's own writers."""
    buffer = io.BytesIO()
    count = 0
    for tag, name, default, implicit, writer in plans:
        value = getattr(entity, name)
        if value == default or (default is MISSING and value == implicit):
            continue
        write_tagged_field(buffer, tag, writer, value)
        count += 1
    out += _uvarint(count)
    out += buffer.getvalue()


_VARIABLE: dict[tuple[str, bool, bool], str] = {
    # (kafka_type family, flexible, nullable) -> helper
    ("string", True, False): "_compact",
    ("string", True, True): "_compact_nullable",
    ("string", False, False): "_legacy_string",
    ("string", False, True): "_legacy_string_nullable",
    ("bytes", True, False): "_compact",
    ("bytes", True, True): "_compact_nullable",
    ("bytes", False, False): "_legacy_bytes",
    ("bytes", False, True): "_legacy_bytes_nullable",
}


class _Generator:
    """Writes the source of one function per entity class reachable from the root class."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {
            "_uvarint": _uvarint,
            "_uuid_bytes": _uuid_bytes,
            "_compact": _compact,
            "_compact_nullable": _compact_nullable,
            "_legacy_string": _legacy_string,
            "_legacy_string_nullable": _legacy_string_nullable,
            "_legacy_bytes": _legacy_bytes,
            "_legacy_bytes_nullable": _legacy_bytes_nullable,
            "_tagged": _tagged,
            "_I16": _I16,
            "_I32": _I32,
        }
        self._names: dict[type[Any], str] = {}

    def _constant(self, prefix: str, value: Any) -> str:
        name = f"_{prefix}{len(self.constants)}"
        self.constants[name] = value
        return name

    def entity_function(self, cls: type[Any]) -> str:
        name = self._names.get(cls)
        if name is not None:
            return name
        name = f"_write_{len(self._names)}_{cls.__name__}"
        self._names[cls] = name
        if cls.__name__ == "RequestHeader":
            raise UnsupportedSchema("request headers have special cases; use kio")
        flexible = bool(cls.__flexible__)
        body: list[str] = []
        pending: list[tuple[str, str]] = []  # a run of fixed-width (struct code, expression)
        tagged: list[tuple[Any, ...]] = []

        def close_run() -> None:
            if pending:
                packer = self._constant("S", struct.Struct(">" + "".join(c for c, _ in pending)))
                body.append(f"    out += {packer}.pack({', '.join(e for _, e in pending)})")
                pending.clear()

        for field in fields(cls):
            tag = get_field_tag(field)
            if tag is not None:
                writer = get_field_writer(
                    field, flexible=flexible, is_request_header=False, is_tag=True
                )
                tagged.append(
                    (tag, field.name, field.default, get_tagged_field_default(field), writer)
                )
                continue
            value = f"v.{field.name}"
            fixed = self._fixed(field, value)
            if fixed is not None:
                pending.append(fixed)
                continue
            close_run()
            body.extend(self._variable(field, value, flexible))
        close_run()
        if flexible:
            if tagged:
                plans = self._constant("T", tuple(sorted(tagged, key=lambda plan: plan[0])))
                body.append(f"    _tagged(out, v, {plans})")
            else:
                body.append("    out += b'\\x00'")
        elif tagged:
            raise UnsupportedSchema(f"{cls.__qualname__}: tagged fields in a non-flexible class")
        self.lines.append(f"def {name}(v, out):")
        self.lines.extend(body or ["    pass"])
        self.lines.append("")
        return name

    def _fixed(self, field: Field[Any], value: str) -> tuple[str, str] | None:
        if is_dataclass(_inner(field.type)) or typing.get_origin(_inner(field.type)) is tuple:
            return None
        kind = get_schema_field_type(field)
        if kind not in _FIXED:
            return None
        if is_optional(field) and kind != "uuid":
            return None  # nullable datetime: handled as a variable field
        code, expression = _FIXED[kind]
        return code, expression.format(v=value)

    def _variable(self, field: Field[Any], value: str, flexible: bool) -> list[str]:
        nullable = is_optional(field)
        shape = classify_field(field)
        if isinstance(shape, PrimitiveField):
            return [self._primitive_line(field, value, flexible, nullable, "    ")]
        if isinstance(shape, EntityField):
            function = self.entity_function(shape.type_)
            if not nullable:
                return [f"    {function}({value}, out)"]
            return _nullable_entity_lines(value, [f"        {function}({value}, out)"])
        # arrays
        lines = _array_header_lines(value, flexible)
        if isinstance(shape, EntityTupleField):
            function = self.entity_function(shape.type_)
            lines += ["        for item in items:", f"            {function}(item, out)"]
        else:
            assert isinstance(shape, PrimitiveTupleField)
            lines += [
                "        for item in items:",
                self._primitive_line(field, "item", flexible, False, "            "),
            ]
        return lines

    def _primitive_line(
        self, field: Field[Any], value: str, flexible: bool, nullable: bool, indent: str
    ) -> str:
        kind = get_schema_field_type(field)
        if kind in _FIXED and not (nullable and kind != "uuid"):
            code, expression = _FIXED[kind]
            packer = self._constant("S", struct.Struct(">" + code))
            return f"{indent}out += {packer}.pack({expression.format(v=value)})"
        if kind == "datetime_i64" and nullable:
            packer = self._constant("S", struct.Struct(">q"))
            return (
                f"{indent}out += {packer}.pack(-1 if {value} is None else "
                f"round({value}.timestamp() * 1000))"
            )
        family = "bytes" if kind in ("bytes", "records") else kind
        helper = _VARIABLE.get((family, flexible, nullable))
        if helper is None:
            raise UnsupportedSchema(f"field {field.name}: kafka_type {kind!r}")
        if helper in ("_legacy_string", "_legacy_bytes"):
            return _inlined(helper, value, indent)
        return f"{indent}{helper}(out, {value})"


def _inlined(helper: str, value: str, indent: str) -> str:
    """`_legacy_string` or `_legacy_bytes`, the lines of its body in place of the call (a
    1000-member JoinGroup leader's answer writes 2000 of them, and every JoinGroup and SyncGroup
    answer a few)."""
    lines = [
        f"_s = {value}",
        "if _s is None:",
        '    raise TypeError("Unexpectedly received None value")',
    ]
    if helper == "_legacy_string":
        lines += ["_s = _s.encode()", "out += _I16.pack(len(_s))"]
    else:
        lines.append("out += _I32.pack(len(_s))")
    lines.append("out += _s")
    return "\n".join(indent + line for line in lines)


#: kafka_type -> expression of a dict's value `{v}` to pack, for fixed-width fields (the
#: conversions `codec.build_response` makes: ints for error codes and durations).
_FIXED_VALUES: dict[str, str] = {
    "error_code": "{v}",  # an `ErrorCode` is an int
    # (an int, the usual value, without the call)
    "timedelta_i32": "({v} if {v}.__class__ is int else _millis({v}))",
    "timedelta_i64": "({v} if {v}.__class__ is int else _millis({v}))",
    "uuid": "_uuid_any({v})",
}


class _ValuesGenerator(_Generator):
    """Writes one function per entity class reading a version-agnostic dict; nested values
    that are kio entities already go to the entity functions of an inner `_Generator`."""

    def __init__(self) -> None:
        super().__init__()
        self.constants["_uuid_any"] = _uuid_any
        self.constants["_millis"] = _millis
        self._entities = _Generator()
        self._entities.lines = self.lines
        self._entities.constants = self.constants

    def entity_function(self, cls: type[Any]) -> str:
        name = self._names.get(cls)
        if name is not None:
            return name
        name = f"_values_{len(self._names)}_{cls.__name__}"
        self._names[cls] = name
        flexible = bool(cls.__flexible__)
        body: list[str] = []
        pending: list[tuple[str, str]] = []

        def close_run() -> None:
            if pending:
                packer = self._constant("S", struct.Struct(">" + "".join(c for c, _ in pending)))
                body.append(f"    out += {packer}.pack({', '.join(e for _, e in pending)})")
                pending.clear()

        for index, field in enumerate(fields(cls)):
            if get_field_tag(field) is not None:
                raise UnsupportedSchema(f"{cls.__qualname__}: tagged field {field.name}")
            local = f"f{index}"
            body.extend(self._fetch(field, local))
            fixed = self._fixed_value(field, local)
            if fixed is not None:
                pending.append(fixed)
                continue
            close_run()
            body.extend(self._variable_value(field, local, flexible))
        close_run()
        if flexible:
            body.append("    out += b'\\x00'")
        self.lines.append(f"def {name}(v, out):")
        self.lines.extend(body or ["    pass"])
        self.lines.append("")
        return name

    def _fetch(self, field: Field[Any], local: str) -> list[str]:
        """Lines setting `local` to the field's value as `build_entity` would fill it."""
        if field.default is not MISSING:
            missing: Any = field.default
        elif field.default_factory is not MISSING:
            missing = field.default_factory()
        else:
            missing = None
        fetched = f"v.get({field.name!r}, {self._literal(missing)})"
        inner, nullable = split_optional(field.type)
        if nullable:
            return [f"    {local} = {fetched}"]
        if typing.get_origin(inner) is tuple:
            zero: Any = ()
        elif is_dataclass(inner):
            zero = {}
        else:
            zero = zero_value(inner)
            if zero is None:
                return [f"    {local} = {fetched}"]
        return [
            f"    {local} = {fetched}",
            f"    if {local} is None:",
            f"        {local} = {self._literal(zero)}",
        ]

    def _literal(self, value: Any) -> str:
        if value is None or value.__class__ in (int, bool, str, bytes, float):
            return repr(value)
        if value == () and value.__class__ is tuple:
            return "()"
        return self._constant("D", value)

    def _fixed_value(self, field: Field[Any], local: str) -> tuple[str, str] | None:
        if is_dataclass(_inner(field.type)) or typing.get_origin(_inner(field.type)) is tuple:
            return None
        kind = get_schema_field_type(field)
        if kind not in _FIXED or kind == "datetime_i64":
            return None
        if is_optional(field) and kind != "uuid":
            return None
        code, _expression = _FIXED[kind]
        return code, _FIXED_VALUES.get(kind, "{v}").format(v=local)

    def _variable_value(self, field: Field[Any], local: str, flexible: bool) -> list[str]:
        nullable = is_optional(field)
        shape = classify_field(field)
        if isinstance(shape, PrimitiveField):
            return [self._value_line(field, local, flexible, nullable, "    ")]
        if isinstance(shape, EntityField):
            if not nullable:  # (None was made the empty entity by `_fetch`)
                return self._entity_lines(shape.type_, local, "    ")
            return _nullable_entity_lines(local, self._entity_lines(shape.type_, local, "        "))
        lines = _array_header_lines(local, flexible)
        lines.append("        for item in items:")
        if isinstance(shape, EntityTupleField):
            lines += self._entity_lines(shape.type_, "item", "            ")
        else:
            assert isinstance(shape, PrimitiveTupleField)
            lines.append(self._value_line(field, "item", flexible, False, "            "))
        return lines

    def _entity_lines(self, cls: type[Any], value: str, indent: str) -> list[str]:
        """A nested entity: a dict by this generator's function, a kio entity by kio's."""
        values_function = self.entity_function(cls)
        entity_function = self._entities.entity_function(cls)
        entity_class = self._constant("C", cls)
        return [
            f"{indent}if isinstance({value}, {entity_class}):",
            f"{indent}    {entity_function}({value}, out)",
            f"{indent}else:",
            f"{indent}    {values_function}({value}, out)",
        ]

    def _value_line(
        self, field: Field[Any], value: str, flexible: bool, nullable: bool, indent: str
    ) -> str:
        kind = get_schema_field_type(field)
        if kind in _FIXED_VALUES and not (nullable and kind != "uuid"):
            code, _expression = _FIXED[kind]
            packer = self._constant("S", struct.Struct(">" + code))
            return f"{indent}out += {packer}.pack({_FIXED_VALUES[kind].format(v=value)})"
        return self._primitive_line(field, value, flexible, nullable, indent)


def _inner(annotation: Any) -> Any:
    """The type inside `X | None`."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if (
        typing.get_origin(annotation) is not None
        and len(args) == 1
        and type(None) in (typing.get_args(annotation))
    ):
        return args[0]
    return annotation


__all__ = ["Encoder", "UnsupportedSchema", "encoder", "values_encoder"]


def _nullable_entity_lines(value: str, body: list[str]) -> list[str]:
    """Generated lines for a nullable struct: -1 for None, else 1 and the struct (`body`)."""
    return [
        f"    if {value} is None:",
        "        out += b'\\xff'",
        "    else:",
        "        out += b'\\x01'",
        *body,
    ]


def _array_header_lines(value: str, flexible: bool) -> list[str]:
    """Generated lines binding `items` and writing an array's length (null as 0 compact, -1)."""
    header = f"    items = {value}"
    if flexible:
        return [
            header,
            "    if items is None:",
            "        out += b'\\x00'",
            "    else:",
            "        out += _uvarint(len(items) + 1)",
        ]
    return [
        header,
        "    if items is None:",
        "        out += b'\\xff\\xff\\xff\\xff'",
        "    else:",
        "        out += _I32.pack(len(items))",
    ]
