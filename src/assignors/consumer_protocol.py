"""The embedded ConsumerProtocol: Subscription and Assignment v0-v3, and the sticky user data.

These bytes travel inside JoinGroup/SyncGroup as opaque "metadata"; every Kafka client must
produce exactly what Java produces or mixed groups break. Subscription and Assignment are read and
written with the `kio` package's classes, generated from Kafka's own JSON schemas; the sticky user
data has no schema there and is encoded by hand here.

Wire rules kept (Java's ``ConsumerProtocol``): an int16 version, then the body of that version.
Topics are written sorted; owned partitions sorted by (topic, partition) and grouped per topic;
generation -1 and rack ``None`` are the defaults. A reader accepts versions above 3 by reading the
v3 layout and ignoring what follows ("future versions only append fields"). Malformed bytes raise
`ConsumerProtocolError`, never an empty result.

Sticky user data (inside Subscription.user_data; no version prefix): v0 = array of
{topic, partitions[]} (the previous assignment); v1 = v0 + int32 generation (KIP-341). Readers try
v1 then v0. The cooperative-sticky assignor's own user data is one int32 generation.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import import_module
from itertools import groupby
from typing import Any

from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from .spec import TopicPartition

LATEST_VERSION = 3
NO_GENERATION = -1


class ConsumerProtocolError(ValueError):
    """Bytes that are not a valid ConsumerProtocol message (or sticky user data)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """A member's ConsumerProtocolSubscription (fields of later versions default when absent)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    rack: str | None = None
    version: int = LATEST_VERSION


@dataclass(frozen=True, slots=True)
class Assignment:
    """A member's ConsumerProtocolAssignment."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None
    version: int = LATEST_VERSION


@dataclass(frozen=True, slots=True)
class StickyUserData:
    """The previous assignment and, from layout v1 on, its generation."""

    previous_assignment: tuple[TopicPartition, ...]
    generation: int | None = None


def _schema(message: str, version: int) -> Any:
    return import_module(f"kio.schema.{message}.v{version}.data")


def _check_version(version: int) -> None:
    if not 0 <= version <= LATEST_VERSION:
        raise ValueError(f"ConsumerProtocol versions are 0..{LATEST_VERSION}, not {version}")


def _grouped(module: Any, partitions: Iterable[TopicPartition], *, sort: bool) -> tuple[Any, ...]:
    items = sorted(partitions) if sort else list(partitions)
    return tuple(
        module.TopicPartition(topic=topic, partitions=tuple(p for _, p in group))
        for topic, group in groupby(items, key=lambda tp: tp[0])
    )


def _write(entity_type: Any, entity: Any, version: int) -> bytes:
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", version))
    entity_writer(entity_type)(buffer, entity)
    return buffer.getvalue()


def _read(message: str, data: bytes, what: str) -> tuple[int, Any]:
    if len(data) < 2:
        raise ConsumerProtocolError(f"{what}: {len(data)} bytes, need at least 2 for the version")
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        raise ConsumerProtocolError(f"{what}: negative version {version}")
    module = _schema(message, min(version, LATEST_VERSION))
    entity_type = getattr(module, _CLASS_NAMES[message])
    try:
        entity, _ = entity_reader(entity_type)(data, 2)
    except (SerialError, ValueError, OverflowError, IndexError) as exc:
        raise ConsumerProtocolError(f"{what} v{version}: malformed bytes ({exc})") from exc
    return version, entity


_CLASS_NAMES = {
    "consumer_protocol_subscription": "ConsumerProtocolSubscription",
    "consumer_protocol_assignment": "ConsumerProtocolAssignment",
}


def encode_subscription(subscription: Subscription, version: int | None = None) -> bytes:
    """Serialize like Java's ``ConsumerProtocol.serializeSubscription`` (default: its version)."""
    version = subscription.version if version is None else version
    _check_version(version)
    module = _schema("consumer_protocol_subscription", version)
    fields: dict[str, Any] = {
        "topics": tuple(sorted(subscription.topics)),
        "user_data": subscription.user_data,
    }
    if version >= 1:
        fields["owned_partitions"] = _grouped(module, subscription.owned_partitions, sort=True)
    if version >= 2:
        fields["generation_id"] = subscription.generation
    if version >= 3:
        fields["rack_id"] = subscription.rack
    entity = module.ConsumerProtocolSubscription(**fields)
    return _write(module.ConsumerProtocolSubscription, entity, version)


def decode_subscription(data: bytes) -> Subscription:
    """Parse a Subscription of any version (above 3: its v3 prefix)."""
    version, entity = _read("consumer_protocol_subscription", data, "Subscription")
    owned = tuple(
        (tp.topic, int(p)) for tp in getattr(entity, "owned_partitions", ()) for p in tp.partitions
    )
    return Subscription(
        topics=tuple(entity.topics),
        user_data=None if entity.user_data is None else bytes(entity.user_data),
        owned_partitions=owned,
        generation=int(getattr(entity, "generation_id", NO_GENERATION)),
        rack=getattr(entity, "rack_id", None),
        version=version,
    )


def encode_assignment(assignment: Assignment, version: int | None = None) -> bytes:
    """Serialize an Assignment; partitions are grouped per topic in (topic, partition) order."""
    version = assignment.version if version is None else version
    _check_version(version)
    module = _schema("consumer_protocol_assignment", version)
    entity = module.ConsumerProtocolAssignment(
        assigned_partitions=_grouped(module, assignment.partitions, sort=True),
        user_data=assignment.user_data,
    )
    return _write(module.ConsumerProtocolAssignment, entity, version)


def decode_assignment(data: bytes) -> Assignment:
    """Parse an Assignment of any version. Empty bytes are an error, not an empty assignment."""
    version, entity = _read("consumer_protocol_assignment", data, "Assignment")
    return Assignment(
        partitions=tuple(
            (tp.topic, int(p)) for tp in entity.assigned_partitions for p in tp.partitions
        ),
        user_data=None if entity.user_data is None else bytes(entity.user_data),
        version=version,
    )


# -- sticky user data (no schema in Kafka's message definitions; written by hand) ---------------


def encode_sticky_user_data(
    previous_assignment: Iterable[TopicPartition], generation: int | None
) -> bytes:
    """Java StickyAssignor user data: layout v1 with a generation, v0 without one."""
    out = bytearray()
    items = sorted(previous_assignment)
    groups = [(t, [p for _, p in g]) for t, g in groupby(items, key=lambda tp: tp[0])]
    out += struct.pack(">i", len(groups))
    for topic, partitions in groups:
        name = topic.encode("utf-8")
        out += struct.pack(">h", len(name)) + name
        out += struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    if generation is not None:
        out += struct.pack(">i", generation)
    return bytes(out)


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """Parse sticky user data, trying layout v1 then v0 (as Java does)."""
    try:
        previous, offset = _read_topic_partitions(data, 0)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ConsumerProtocolError(f"sticky user data: malformed ({exc})") from exc
    if len(data) - offset >= 4:
        (generation,) = struct.unpack_from(">i", data, offset)
        return StickyUserData(previous, generation)
    if offset == len(data):
        return StickyUserData(previous, None)
    raise ConsumerProtocolError(f"sticky user data: {len(data) - offset} stray trailing bytes")


def _read_topic_partitions(data: bytes, offset: int) -> tuple[tuple[TopicPartition, ...], int]:
    (count,) = struct.unpack_from(">i", data, offset)
    offset += 4
    if count < 0:
        raise ValueError(f"negative topic count {count}")
    result: list[TopicPartition] = []
    for _ in range(count):
        (length,) = struct.unpack_from(">h", data, offset)
        offset += 2
        if length < 0 or offset + length > len(data):
            raise ValueError(f"bad topic name length {length}")
        topic = data[offset : offset + length].decode("utf-8")
        offset += length
        (n,) = struct.unpack_from(">i", data, offset)
        offset += 4
        if n < 0 or offset + 4 * n > len(data):
            raise ValueError(f"bad partition count {n}")
        result.extend((topic, p) for p in struct.unpack_from(f">{n}i", data, offset))
        offset += 4 * n
    return tuple(result), offset


def encode_cooperative_user_data(generation: int) -> bytes:
    """Java CooperativeStickyAssignor user data: one int32 generation."""
    return struct.pack(">i", generation)


def decode_cooperative_user_data(data: bytes) -> int:
    """The generation in Java CooperativeStickyAssignor user data."""
    if len(data) < 4:
        raise ConsumerProtocolError(f"cooperative user data: {len(data)} bytes, need 4")
    generation: int = struct.unpack_from(">i", data)[0]
    return generation
