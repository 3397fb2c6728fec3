"""Thin glue between the byte stream and kio's generated protocol classes.

kio does all the field encoding and decoding. The only bytes read by hand are the int32 frame
length and the fixed request prefix (int16 api_key, int16 api_version, int32 correlation_id),
which every request version shares: they are needed to choose the kio class, and to answer a
request whose version kio (or we) cannot decode (KIP-511's UNSUPPORTED_VERSION ApiVersions answer).

`build_response` fills the response dataclass of one specific version from a version-agnostic
dict, so API handlers can describe a response once and serve every version with it: keys the
version lacks are dropped, ints become `timedelta`/`ErrorCode`, `None` in a field that is not
nullable in this version becomes the field's zero value (e.g. `""`), missing fields get their
default. This is what keeps old clients working when a newer version made a field nullable.
"""

from __future__ import annotations

import io
import struct
import typing
import uuid
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from datetime import timedelta
from functools import cache
from typing import Any, Final

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32
from kio.static.protocol import RequestPayload, ResponsePayload

from coordinator.wire import fast_encode
from coordinator.wire.field_types import split_optional, zero_value
from rebalance.quick_init import quick_init

FRAME_LENGTH: Final = struct.Struct(">i")
REQUEST_PREFIX: Final = struct.Struct(">hhi")


class FrameError(ValueError):
    """The bytes on a connection are not a well-formed request frame."""


class RequestPrefix(typing.NamedTuple):
    """The version-independent start of every request: enough to route it and to answer it.
    (A named tuple: made for every request, it costs a third of a frozen dataclass.)"""

    api_key: int
    api_version: int
    correlation_id: int


def read_frame_length(raw: bytes, max_bytes: int) -> int:
    """Decode the int32 length prefix and enforce `socket.request.max.bytes`."""
    (length,) = FRAME_LENGTH.unpack(raw)
    if length < REQUEST_PREFIX.size:
        raise FrameError(f"frame length {length} is smaller than a request header")
    if length > max_bytes:
        raise FrameError(f"frame length {length} exceeds socket.request.max.bytes={max_bytes}")
    return int(length)


def read_prefix(frame: bytes) -> RequestPrefix:
    """Read api_key, api_version and correlation_id from the start of a request frame."""
    if len(frame) < REQUEST_PREFIX.size:
        raise FrameError(f"frame of {len(frame)} bytes is too short for a request header")
    api_key, api_version, correlation_id = REQUEST_PREFIX.unpack_from(frame, 0)
    return RequestPrefix(api_key, api_version, correlation_id)


#: This project's own APIs (keys outside Kafka's range): api key -> {version: (request class,
#: response class)}. The classes are kio-style dataclasses, read and written by kio's own
#: serializer like every Kafka message; `register_schemas` adds them.
_EXTENSION_SCHEMAS: dict[int, dict[int, tuple[type[Any], type[Any]]]] = {}


def register_schemas(api_key: int, schemas: Mapping[int, tuple[type[Any], type[Any]]]) -> None:
    """Make an extension API's request and response classes known to the codec. A key kio
    knows (a Kafka API) is refused: its schemas are Kafka's."""
    if api_key in api_key_map:
        raise ValueError(f"api key {api_key} is Kafka's ({api_key_map[api_key]})")
    known = _EXTENSION_SCHEMAS.setdefault(api_key, {})
    for version, (request, response) in schemas.items():
        if request.__api_key__ != api_key or response.__api_key__ != api_key:
            raise ValueError(f"schemas for api key {api_key} declare another key")
        if request.__version__ != version or response.__version__ != version:
            raise ValueError(f"schemas for api key {api_key} v{version} declare another version")
        known[version] = (request, response)
    request_class.cache_clear()
    response_class.cache_clear()
    for version in schemas:
        _READERS.pop((api_key, version), None)
        FRAME_WRITERS.pop((api_key, version), None)


def kio_versions(api_key: int) -> range:
    """The contiguous range of versions kio can decode for an API key (empty if unknown)."""
    extension = _EXTENSION_SCHEMAS.get(api_key)
    if extension:
        return range(min(extension), max(extension) + 1)
    name = api_key_map.get(api_key)
    if name is None:
        return range(0)
    versions = sorted(schema_name_map[name])
    return range(versions[0], versions[-1] + 1)


@cache
def request_class(api_key: int, api_version: int) -> type[RequestPayload]:
    """kio's request class for one version (raises kio's UnknownEntity/UnknownAPIKey)."""
    extension = _EXTENSION_SCHEMAS.get(api_key)
    if extension is not None and api_version in extension:
        return typing.cast(type[RequestPayload], extension[api_version][0])
    return load_request_schema(api_key, api_version)


@cache
def response_class(api_key: int, api_version: int) -> type[ResponsePayload]:
    """kio's response class for one version (raises kio's UnknownEntity/UnknownAPIKey)."""
    extension = _EXTENSION_SCHEMAS.get(api_key)
    if extension is not None and api_version in extension:
        return typing.cast(type[ResponsePayload], extension[api_version][1])
    return load_response_schema(api_key, api_version)


@quick_init  # built for every request
@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A request as kio decoded it: its header (for client_id) and its body."""

    header: Any
    body: RequestPayload

    @property
    def client_id(self) -> str | None:
        client_id = getattr(self.header, "client_id", None)
        return None if client_id is None else str(client_id)


#: (api key, version) -> kio's readers of the request's header and body.
_READERS: dict[tuple[int, int], tuple[Callable[..., Any], Callable[..., Any]]] = {}


def decode_request(frame: bytes, prefix: RequestPrefix) -> DecodedRequest:
    """Decode header and body of a request with kio.

    Trailing bytes after the body are ignored on purpose: librdkafka pads some Metadata requests
    with zero bytes. Any kio decoding failure is re-raised as `FrameError`.
    """
    return DecodedRequest(*_read(frame, prefix))


def read_request(frame: bytes, prefix: RequestPrefix) -> tuple[str | None, RequestPayload]:
    """`decode_request`'s client id and body, all the server needs of a request (without the
    `DecodedRequest` and its property: this runs for every request)."""
    header, request = _read(frame, prefix)
    client_id = getattr(header, "client_id", None)
    if client_id is None or client_id.__class__ is str:
        return client_id, request
    return str(client_id), request


def _read(frame: bytes, prefix: RequestPrefix) -> tuple[Any, RequestPayload]:
    readers = _READERS.get((prefix.api_key, prefix.api_version))
    if readers is None:
        cls = request_class(prefix.api_key, prefix.api_version)
        readers = _READERS[prefix.api_key, prefix.api_version] = (
            entity_reader(cls.__header_schema__),
            entity_reader(cls),
        )
    read_header, read_body = readers
    try:
        header, header_size = read_header(frame, 0)
        request, _body_size = read_body(frame, header_size)
    except Exception as exc:  # kio raises ValueError, UnicodeDecodeError, its own SerialErrors
        raise FrameError(
            f"cannot decode api_key={prefix.api_key} v{prefix.api_version}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return header, request


@dataclass(frozen=True, slots=True)
class EncodedBody:
    """A response body already written by kio, for answers that are the same for many requests
    (ApiVersions, Heartbeat): only the header, which carries the correlation id, is written per
    request."""

    response_type: type[ResponsePayload]
    body: bytes
    #: What follows the correlation id in the frame: the header's rest and the body.
    after_correlation: bytes = field(default=b"", compare=False, repr=False)


def encode_body(response: ResponsePayload) -> EncodedBody:
    cls = type(response)
    body = body_encoder(cls)(response)
    return EncodedBody(cls, body, _header_tail(cls) + body)


def encode_response(response: ResponsePayload | EncodedBody, correlation_id: int) -> bytes:
    """Length-prefixed bytes of a response: its header (the version's, as kio chooses it) and
    its body (`fast_encode`, byte-identical to kio's writer)."""
    if isinstance(response, EncodedBody):
        rest = response.after_correlation
        if rest:  # (made by `encode_body`)
            return _FRAME_AND_CORRELATION.pack(4 + len(rest), correlation_id) + rest
        cls, body = response.response_type, response.body
    else:
        cls = type(response)
        body = body_encoder(cls)(response)
    tail = _header_tail(cls)
    return _FRAME_AND_CORRELATION.pack(4 + len(tail) + len(body), correlation_id) + tail + body


_FRAME_AND_CORRELATION: Final = struct.Struct(">ii")


@cache
def _header_tail(cls: type[ResponsePayload]) -> bytes:
    """What a response header of `cls` holds after its correlation id (an empty tagged-field
    section in flexible header versions, nothing in v0), written once by kio."""
    header_cls = cls.__header_schema__
    buffer = io.BytesIO()
    entity_writer(header_cls)(buffer, header_cls(correlation_id=i32(0)))
    return buffer.getvalue()[4:]


@cache
def body_encoder(cls: type[ResponsePayload]) -> Callable[[Any], bytes]:
    """The generated encoder of a response class, or kio's writer for a schema the generator
    does not cover (none of the advertised responses: see
    tests/coordinator/wire/test_fast_encode)."""
    try:
        return fast_encode.encoder(cls)
    except fast_encode.UnsupportedSchema:
        write = entity_writer(cls)

        def kio_encode(response: Any) -> bytes:
            buffer = io.BytesIO()
            write(buffer, response)
            return buffer.getvalue()

        return kio_encode


def encode_values(
    api_key: int, api_version: int, values: Mapping[str, Any], correlation_id: int
) -> bytes:
    """`encode_response(build_response(api_key, api_version, values), correlation_id)`, the
    same bytes, written straight from the dict (`fast_encode.values_encoder`)."""
    write = FRAME_WRITERS.get((api_key, api_version))
    if write is None:
        write = _frame_writer(api_key, api_version)
    return write(values, correlation_id)


#: (api key, version) -> the function writing a whole response frame from a handler's dict
#: (one lookup per answer instead of the class, its encoder and its header); filled by
#: `encode_values`, which the server calls when a key is missing.
FRAME_WRITERS: dict[tuple[int, int], Callable[[Mapping[str, Any], int], bytes]] = {}


def _frame_writer(api_key: int, api_version: int) -> Callable[[Mapping[str, Any], int], bytes]:
    cls = response_class(api_key, api_version)
    tail = _header_tail(cls)
    try:
        write_body = fast_encode.values_writer(cls)
    except fast_encode.UnsupportedSchema:
        encode_body = values_body_encoder(cls)

        def write_frame(values: Mapping[str, Any], correlation_id: int) -> bytes:
            body = encode_body(values)
            size = 4 + len(tail) + len(body)
            return _FRAME_AND_CORRELATION.pack(size, correlation_id) + tail + body

    else:
        start = bytes(_FRAME_AND_CORRELATION.size) + tail
        pack_into = _FRAME_AND_CORRELATION.pack_into

        def write_frame(values: Mapping[str, Any], correlation_id: int) -> bytes:
            # Length, correlation id and header, then the body appended in the same array.
            out = bytearray(start)
            write_body(values, out)
            pack_into(out, 0, len(out) - 4, correlation_id)
            return bytes(out)

    FRAME_WRITERS[(api_key, api_version)] = write_frame
    return write_frame


@cache
def values_body_encoder(cls: type[ResponsePayload]) -> Callable[[Mapping[str, Any]], bytes]:
    """The generated dict encoder of a response class, or `build_entity` and `body_encoder`
    for a class the generator leaves to them (tagged fields)."""
    try:
        return fast_encode.values_encoder(cls)
    except fast_encode.UnsupportedSchema:
        encode = body_encoder(cls)

        def build_and_encode(values: Mapping[str, Any]) -> bytes:
            return encode(build_entity(cls, values))

        return build_and_encode


def encode_request(request: RequestPayload, correlation_id: int, client_id: str | None) -> bytes:
    """Length-prefixed bytes of a request (the client direction: tests, benchmarks)."""
    cls = type(request)
    header_cls = cls.__header_schema__
    header = header_cls(
        request_api_key=cls.__api_key__,
        request_api_version=cls.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    entity_writer(header_cls)(buffer, header)
    entity_writer(cls)(buffer, request)
    data = buffer.getbuffer()
    FRAME_LENGTH.pack_into(data, 0, len(data) - FRAME_LENGTH.size)
    del data
    return buffer.getvalue()


def decode_response(frame: bytes, api_key: int, api_version: int) -> tuple[int, ResponsePayload]:
    """(correlation_id, response) from a response frame (the client direction)."""
    cls = response_class(api_key, api_version)
    header, header_size = entity_reader(cls.__header_schema__)(frame, 0)
    response, _size = entity_reader(cls)(frame, header_size)
    return int(header.correlation_id), response


def build_request(api_key: int, api_version: int, values: Mapping[str, Any]) -> RequestPayload:
    """Fill the kio request class of (api_key, api_version) from a version-agnostic dict."""
    return typing.cast(RequestPayload, build_entity(request_class(api_key, api_version), values))


def build_response(api_key: int, api_version: int, values: Mapping[str, Any]) -> ResponsePayload:
    """Fill the kio response class of (api_key, api_version) from a version-agnostic dict."""
    result = build_entity(response_class(api_key, api_version), values)
    return typing.cast(ResponsePayload, result)


def build_entity(cls: type[Any], values: Mapping[str, Any]) -> Any:
    """Fill any kio dataclass (response, nested struct) from a dict; see the module docstring."""
    kwargs: dict[str, Any] = {}
    for plan in _field_plans(cls):
        if plan.name in values:
            kwargs[plan.name] = plan.convert(values[plan.name])
        elif not plan.has_default:
            kwargs[plan.name] = plan.convert(None)
    return cls(**kwargs)


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    has_default: bool
    convert: Callable[[Any], Any]


_PLANS: dict[type[Any], tuple[_FieldPlan, ...]] = {}


def _field_plans(cls: type[Any]) -> tuple[_FieldPlan, ...]:
    cached = _PLANS.get(cls)
    if cached is not None:
        return cached
    plans = []
    for f in fields(cls):
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        plans.append(_FieldPlan(f.name, has_default, _converter(f.type)))
    _PLANS[cls] = result = tuple(plans)
    return result


def _converter(annotation: Any) -> Callable[[Any], Any]:
    inner, nullable = split_optional(annotation)
    if typing.get_origin(inner) is tuple:
        item_convert = _converter(typing.get_args(inner)[0])

        def convert_array(value: Any) -> Any:
            if value is None:
                return None if nullable else ()
            return tuple(item_convert(item) for item in value)

        return convert_array
    if is_dataclass(inner):
        entity_cls = typing.cast(type[Any], inner)

        def convert_entity(value: Any) -> Any:
            if value is None:
                return None if nullable else build_entity(entity_cls, {})
            if isinstance(value, Mapping):
                return build_entity(entity_cls, value)
            return value

        return convert_entity
    zero = zero_value(inner)
    make = _scalar_maker(inner)

    def convert_scalar(value: Any) -> Any:
        if value is None:
            return None if nullable else zero
        return make(value)

    return convert_scalar


def _scalar_maker(kind: Any) -> Callable[[Any], Any]:
    if isinstance(kind, type) and issubclass(kind, ErrorCode):
        return lambda v: v if isinstance(v, ErrorCode) else ErrorCode(int(v))
    if isinstance(kind, type) and issubclass(kind, timedelta):
        return lambda v: v if isinstance(v, timedelta) else timedelta(milliseconds=int(v))
    if kind is uuid.UUID:
        return lambda v: v if isinstance(v, uuid.UUID) else uuid.UUID(str(v))
    return lambda v: v


__all__ = [
    "FRAME_LENGTH",
    "FRAME_WRITERS",
    "REQUEST_PREFIX",
    "DecodedRequest",
    "EncodedBody",
    "FrameError",
    "RequestPrefix",
    "body_encoder",
    "build_entity",
    "build_request",
    "build_response",
    "decode_request",
    "decode_response",
    "encode_body",
    "encode_request",
    "encode_response",
    "encode_values",
    "kio_versions",
    "read_frame_length",
    "read_prefix",
    "read_request",
    "register_schemas",
    "request_class",
    "response_class",
    "values_body_encoder",
]
