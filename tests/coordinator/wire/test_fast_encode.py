"""The generated response encoders write exactly kio's bytes.

For every response class of every version kio knows and every version the server advertises
(the extension APIs' own schema classes too), three responses are built from the schema alone:
every field at its default, every field set (strings long enough for two-byte lengths,
non-ASCII text, tagged fields set), and every nullable field null. Each is encoded by kio's
writer and by the generated encoder; the bytes must be identical, and kio must read them back
whole. The dict encoders (`encode_values`) are held to kio's bytes of the response
`build_response` makes from the same dict.
"""

from __future__ import annotations

import datetime
import io
import typing
import uuid
from dataclasses import MISSING, Field, fields, is_dataclass
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import get_field_tag, get_schema_field_type, is_optional

from coordinator.groups.apis import GROUP_APIS
from coordinator.node.apis import builtin_registry
from coordinator.wire import fast_encode
from coordinator.wire.codec import (
    body_encoder,
    build_response,
    encode_response,
    encode_values,
    kio_versions,
    response_class,
    values_body_encoder,
)

ALL_KEYS = range(0, 100)


def _response_classes() -> list[tuple[int, int]]:
    found = []
    for api_key in ALL_KEYS:
        for version in kio_versions(api_key):
            try:
                response_class(api_key, version)
            except Exception:
                continue
            found.append((api_key, version))
    return found


def _advertised() -> list[tuple[int, int]]:
    """Every (api key, version) a node with the group coordinator advertises, the extension
    APIs' own schema classes included (registering them makes them known to the codec)."""
    registry = builtin_registry()
    for module in GROUP_APIS:
        registry.register(module)
    return [(spec.api_key, version) for spec in registry for version in spec.versions]


ADVERTISED = _advertised()
CLASSES = sorted(set(_response_classes()) | set(ADVERTISED))


def _inner(annotation: Any) -> tuple[Any, bool]:
    args = typing.get_args(annotation)
    if type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return inner, True
    return annotation, False


def _primitive(kind: str, rich: bool) -> Any:
    if not rich:
        return {
            "string": "",
            "bytes": b"",
            "records": b"",
            "bool": False,
            "error_code": ErrorCode.none,
            "timedelta_i32": datetime.timedelta(0),
            "timedelta_i64": datetime.timedelta(0),
            "datetime_i64": datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
            "uuid": uuid.UUID(int=0),
            "float64": 0.0,
        }.get(kind, 0)
    return {
        "string": "h\u00e9llo-" + "x" * 130,
        "bytes": b"\x00\x01" + b"y" * 140,
        "records": b"\x02" * 9,
        "bool": True,
        "error_code": ErrorCode.unknown_server_error,
        "timedelta_i32": datetime.timedelta(milliseconds=1500),
        "timedelta_i64": datetime.timedelta(milliseconds=2**33),
        "datetime_i64": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=datetime.UTC),
        "uuid": uuid.UUID(int=0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0),
        "float64": 1.5,
        "int8": -7,
        "int16": 300,
        "int32": -70_000,
        "int64": 2**40,
        "uint8": 200,
        "uint16": 65_000,
        "uint32": 4_000_000_000,
        "uint64": 2**63,
    }[kind]


def sample(cls: type[Any], variant: str) -> Any:
    """A response of `cls`: "defaults", "rich" (every field set) or "nulls" (nullable None)."""
    kwargs: dict[str, Any] = {}
    for field in fields(cls):
        if field.name.startswith("_"):
            continue
        value = _field_value(field, variant)
        if value is not MISSING:
            kwargs[field.name] = value
    return cls(**kwargs)


def _field_value(field: Field[Any], variant: str) -> Any:
    has_default = field.default is not MISSING or field.default_factory is not MISSING
    if variant == "defaults" and has_default:
        return MISSING
    if variant == "nulls" and get_field_tag(field) is None and is_optional(field):
        return None
    annotation, _nullable = _inner(field.type)
    rich = variant != "defaults"
    if typing.get_origin(annotation) is tuple:
        item = typing.get_args(annotation)[0]
        if is_dataclass(item):
            return tuple(sample(typing.cast(type[Any], item), variant) for _ in range(2))
        kind = get_schema_field_type(field)
        return (_primitive(kind, rich), _primitive(kind, rich)) if rich else ()
    if is_dataclass(annotation):
        return sample(typing.cast(type[Any], annotation), variant)
    return _primitive(get_schema_field_type(field), rich)


def kio_bytes(response: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(response))(buffer, response)
    return buffer.getvalue()


@pytest.mark.parametrize("variant", ["defaults", "rich", "nulls"])
def test_generated_encoders_write_kios_bytes_for_every_response_version(variant: str) -> None:
    assert len(CLASSES) > 250  # every API key and version kio knows
    checked = 0
    for api_key, version in CLASSES:
        cls = response_class(api_key, version)
        response = sample(cls, variant)
        expected = kio_bytes(response)
        actual = fast_encode.encoder(cls)(response)
        assert actual == expected, f"api_key {api_key} v{version} ({variant})"
        decoded, size = entity_reader(cls)(actual, 0)
        assert size == len(actual)
        # kio reads every byte back; (null uuids and timestamps read back as their zero
        # values, so the decoded response is compared by its encoding)
        assert kio_bytes(decoded) == actual, f"api_key {api_key} v{version} ({variant})"
        checked += 1
    assert checked == len(CLASSES)


def test_every_advertised_response_has_a_generated_encoder() -> None:
    for api_key, version in ADVERTISED:
        encode = body_encoder(response_class(api_key, version))
        assert encode.__qualname__.startswith("encode_"), (api_key, version)


@pytest.mark.parametrize("api_key, version", [(18, 0), (18, 3), (12, 4), (11, 5), (11, 7)])
def test_whole_response_frames_match_kio(api_key: int, version: int) -> None:
    """Length, header (v0, or v1 with its empty tagged fields) and body, as kio frames them."""
    cls = response_class(api_key, version)
    response = sample(cls, "rich")
    header_cls = cls.__header_schema__
    header = io.BytesIO()
    entity_writer(header_cls)(header, header_cls(correlation_id=123_456))
    body = header.getvalue() + kio_bytes(response)
    expected = len(body).to_bytes(4, "big") + body
    assert encode_response(response, 123_456) == expected


def as_values(entity: Any, plain: bool) -> dict[str, Any]:
    """A kio entity as the version-agnostic dict a handler returns; `plain`: error codes and
    durations as ints, nested entities as dicts (else nested entities stay kio entities)."""
    values: dict[str, Any] = {}
    for field in fields(entity):
        value = getattr(entity, field.name)
        if plain:
            value = _plain(value)
        values[field.name] = value
    return values


def _plain(value: Any) -> Any:
    if isinstance(value, ErrorCode):
        return int(value)
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if is_dataclass(value):
        return as_values(value, plain=True)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _values_variants(cls: type[Any]) -> list[tuple[str, dict[str, Any]]]:
    rich = sample(cls, "rich")
    return [
        ("rich, plain values", as_values(rich, plain=True)),
        ("rich, kio values and nested entities", as_values(rich, plain=False)),
        ("nulls", as_values(sample(cls, "nulls"), plain=True)),
        ("defaults", as_values(sample(cls, "defaults"), plain=True)),
        ("empty: every field missing", {}),
        ("every field None", dict.fromkeys((f.name for f in fields(cls)), None)),
        ("keys this version lacks", {**as_values(rich, plain=True), "no_such_field": 1}),
    ]


def test_values_encoders_write_the_bytes_of_the_response_build_response_makes() -> None:
    """A handler's dict written straight (`encode_values`) is byte for byte what kio writes for
    `build_response` of that dict: defaults, zero values for None, ints for error codes and
    durations, kio entities nested in the dict."""
    direct = 0
    for api_key, version in CLASSES:
        cls = response_class(api_key, version)
        encode = values_body_encoder(cls)
        direct += encode.__qualname__.startswith("encode_values_")
        for variant, values in _values_variants(cls):
            try:
                expected = kio_bytes(build_response(api_key, version, values))
            except Exception as exc:  # what kio cannot write, neither may we
                with pytest.raises(type(exc)):
                    encode(values)
                continue
            assert encode(values) == expected, f"api_key {api_key} v{version} ({variant})"
            frame = encode_values(api_key, version, values, 99)
            response = build_response(api_key, version, values)
            assert frame == encode_response(response, 99), f"api_key {api_key} v{version}"
    assert direct > 200  # all but the classes with tagged fields
