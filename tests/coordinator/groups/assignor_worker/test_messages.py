"""The messages between the assignor worker's parent and child: each kind comes out of its frame
as it went in, a stream ends cleanly at a frame's edge or a cut frame, a message of the other
direction is refused with a one-line error, and the bulky kinds are cut into pieces of about
`CHUNK_ENTRIES` entries that together are the whole."""

from __future__ import annotations

import io

import pytest

from coordinator.groups.assignor_worker import messages
from coordinator.groups.assignor_worker.messages import (
    Compute,
    Delta,
    Failed,
    Forget,
    Order,
    Prime,
    Primed,
    Result,
    Stats,
    StatsRequest,
    deltas,
    encode,
    read_reply,
    read_request,
    result_chunks,
)
from coordinator.groups.store.base import StoredRecord
from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.records import Assignment
from rebalance.topics import TopicInfo, TopicMetadata

METADATA = TopicMetadata.of([TopicInfo("t", "id-t", 4)])
MEMBER = MemberInputs("m1", ("t",), None, "rack-a", None)
TARGET: Assignment = (("id-t", (0, 1)),)


def test_each_request_comes_out_of_its_frame_as_it_went_in() -> None:
    sent = [
        Delta("g", METADATA, ["gone"], [MEMBER], {"m1": TARGET, "gone": None}),
        Compute("g", 1, 5, "uniform", None),
        Compute("g", 2, 6, "range", ["m2", "m1"]),
        Order("g", ["m1"]),
        Prime("g", 3, "uniform"),
        Forget("g"),
        StatsRequest(4),
    ]
    stream = io.BytesIO(b"".join(map(encode, sent)))
    received = []
    while (message := read_request(stream)) is not None:
        received.append(message)
    assert received == sent
    assert [type(m) for m in received] == [type(m) for m in sent]


def test_each_reply_comes_out_of_its_frame_as_it_went_in() -> None:
    row = StoredRecord("consumer", "g/target/m1", b"{}")
    sent = [
        Result(1, {"m1": TARGET}, {"m1": row}, False),
        Result(1, {}, {}, True),
        Failed(2, "ValueError('no such assignor')"),
        Primed(3),
        Stats(4, 123_456),
    ]
    stream = io.BytesIO(b"".join(map(encode, sent)))
    received = []
    while (message := read_reply(stream)) is not None:
        received.append(message)
    assert received == sent


def test_a_cut_frame_ends_the_stream() -> None:
    frame = encode(Forget("g"))
    for cut in (1, messages.FRAME_HEADER.size, len(frame) - 1):
        assert read_request(io.BytesIO(frame[:cut])) is None


def test_a_message_of_the_other_direction_is_refused() -> None:
    with pytest.raises(ValueError, match="not a request: Primed"):
        read_request(io.BytesIO(encode(Primed(1))))
    with pytest.raises(ValueError, match="not a reply: Forget"):
        read_reply(io.BytesIO(encode(Forget("g"))))


def test_a_delta_is_cut_in_messages_that_together_are_the_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(messages, "CHUNK_ENTRIES", 7)
    upserts = [MemberInputs(f"m{n}", ("t", "u"), None, None, None) for n in range(10)]
    targets: dict[str, Assignment | None] = {f"m{n}": TARGET for n in range(10)}
    targets["gone"] = None
    cut = list(deltas("g", METADATA, ["gone"], upserts, targets))
    assert len(cut) > 1
    # the metadata and the removals come once, first
    assert (cut[0].metadata, cut[0].removed) == (METADATA, ["gone"])
    assert all(d.metadata is None and d.removed == [] for d in cut[1:])
    assert [m for d in cut for m in d.upserts] == upserts
    assert {k: v for d in cut for k, v in d.targets.items()} == targets
    for delta in cut:  # each at most about CHUNK_ENTRIES entries: one entry over at most
        weight = len(delta.upserts) + sum(
            messages.weight_of_target(t) for t in delta.targets.values()
        )
        assert weight <= 7 + 3


def test_an_empty_delta_is_still_one_message() -> None:
    assert list(deltas("g", None, [], [], {})) == [Delta("g", None, [], [], {})]


def test_a_result_is_cut_in_chunks_that_together_are_the_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(messages, "CHUNK_ENTRIES", 7)
    changed = {f"m{n}": TARGET for n in range(10)}
    chunks = list(result_chunks(changed))
    assert [len(c) for c in chunks] == [4, 4, 2]  # a target of one topic weighs 2
    assert {k: v for c in chunks for k, v in c.items()} == changed
    assert list(result_chunks({})) == [{}]
