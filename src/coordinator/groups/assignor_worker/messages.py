"""The messages between the assignor worker's parent (`parent`) and its child process (`child`):
one named tuple per kind, framed as a 4-byte big-endian length and a pickle, and the cutting of
the two bulky kinds (`Delta` in, `Result` out) into messages of at most `CHUNK_ENTRIES` entries.

In (parent to child): `Delta` (what changed in a group since the child's copy), `Compute`,
`Order` (the members' order, when priming), `Prime`, `Forget`, `StatsRequest`.
Out (child to parent): `Result` (in chunks), `Failed`, `Primed`, `Stats`.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Iterator
from typing import IO, NamedTuple

from coordinator.groups.store.base import StoredRecord
from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.records import Assignment
from rebalance.topics import TopicMetadata

FRAME_HEADER = struct.Struct(">I")

CHUNK_ENTRIES = 5_000
"""Most (member, topic) entries per message: pickling or unpickling one (a single C call that
holds the interpreter lock) stays short."""


# ================================================================================ parent to child
class Delta(NamedTuple):
    """What changed in a group since the child's copy: its metadata (None: the same object),
    member ids removed, `MemberInputs` to replace in place or append, member id -> target or
    None to drop it."""

    group_id: str
    metadata: TopicMetadata | None
    removed: list[str]
    upserts: list[MemberInputs]
    targets: dict[str, Assignment | None]


class Compute(NamedTuple):
    """Compute the group's target from the copy; `order`: the members' order when it is not
    what the deltas gave."""

    group_id: str
    job: int
    group_epoch: int
    assignor: str
    order: list[str] | None


class Order(NamedTuple):
    """The members' order of a group being primed, when it is not what the deltas gave."""

    group_id: str
    order: list[str]


class Prime(NamedTuple):
    """Every delta of a priming is sent: run `uniform` once to keep its outcome, then echo
    `Primed`."""

    group_id: str
    job: int
    assignor: str


class Forget(NamedTuple):
    group_id: str


class StatsRequest(NamedTuple):
    job: int


Request = Delta | Compute | Order | Prime | Forget | StatsRequest


# ================================================================================ child to parent
class Result(NamedTuple):
    """A chunk of a computation's result: member id -> changed target, and its target record as
    `record_codec` stores it; `last` ends the result."""

    job: int
    chunk: dict[str, Assignment]
    rows: dict[str, StoredRecord]
    last: bool


class Failed(NamedTuple):
    job: int
    message: str


class Primed(NamedTuple):
    job: int


class Stats(NamedTuple):
    job: int
    peak_rss_bytes: int


Reply = Result | Failed | Primed | Stats


# ========================================================================================= frames
def encode(message: Request | Reply) -> bytes:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    return FRAME_HEADER.pack(len(data)) + data


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = stream.read(FRAME_HEADER.size)
    if len(header) < FRAME_HEADER.size:
        return None
    (length,) = FRAME_HEADER.unpack(header)
    data = stream.read(length)
    if len(data) < length:
        return None
    return data


def _read(stream: IO[bytes], direction: str) -> object | None:
    frame = _read_frame(stream)
    if frame is None:
        return None
    message = pickle.loads(frame)
    if not isinstance(message, Request if direction == "request" else Reply):
        raise ValueError(f"assignor worker: not a {direction}: {type(message).__name__}")
    return message


def read_request(stream: IO[bytes]) -> Request | None:
    """The next message to the child; None at the end of the input."""
    message = _read(stream, "request")
    assert message is None or isinstance(message, Request)
    return message


def read_reply(stream: IO[bytes]) -> Reply | None:
    """The next message from the child; None at the end of its output."""
    message = _read(stream, "reply")
    assert message is None or isinstance(message, Reply)
    return message


# ================================================================================= bulky messages
def weight_of_target(assignment: Assignment | None) -> int:
    return 1 + (len(assignment) if assignment else 0)


def deltas(
    group_id: str,
    metadata: TopicMetadata | None,
    removed: list[str],
    upserts: list[MemberInputs],
    targets: dict[str, Assignment | None],
) -> Iterator[Delta]:
    """The `Delta` messages, each of at most about `CHUNK_ENTRIES` entries (the first carries
    the metadata and the removals); at least one."""
    members: list[MemberInputs] = []
    chunk: dict[str, Assignment | None] = {}
    weight = 0
    first = True
    pickled: set[int] = set()  # subscriptions in this message: the pickle holds each once

    def flush() -> Delta:
        nonlocal members, chunk, weight, first
        message = Delta(
            group_id, metadata if first else None, removed if first else [], members, chunk
        )
        members, chunk, weight, first = [], {}, 0, False
        pickled.clear()
        return message

    for member in upserts:
        members.append(member)
        weight += 1
        if id(member.topic_names) not in pickled:
            pickled.add(id(member.topic_names))
            weight += len(member.topic_names)
        if weight >= CHUNK_ENTRIES:
            yield flush()
    for member_id, assignment in targets.items():
        chunk[member_id] = assignment
        weight += weight_of_target(assignment)
        if weight >= CHUNK_ENTRIES:
            yield flush()
    if first or members or chunk:
        yield flush()


def result_chunks(changed: dict[str, Assignment]) -> Iterator[dict[str, Assignment]]:
    """`changed` in pieces of at most about `CHUNK_ENTRIES` entries, one `Result` each; at
    least one."""
    chunk: dict[str, Assignment] = {}
    weight = 0
    for member_id, assignment in changed.items():
        chunk[member_id] = assignment
        weight += weight_of_target(assignment)
        if weight >= CHUNK_ENTRIES:
            yield chunk
            chunk, weight = {}, 0
    yield chunk
