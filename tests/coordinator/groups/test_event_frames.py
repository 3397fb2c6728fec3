"""The event log's frames marshalled in slices: byte for byte what `marshal.dumps(frame, 2)`
writes for the whole, and no single `marshal.dumps` call over a large target's worth of values."""

from __future__ import annotations

import marshal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.event_log import frames as event_frames

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=6).map(tuple),
        st.dictionaries(st.text(max_size=4), inner, max_size=6),
    ),
    max_leaves=40,
)
events = st.tuples(
    st.sampled_from(["target_assignment", "member_joined"]),
    st.integers(0, 2**40),
    st.text(max_size=5),
    st.integers(-1, 100),
    st.one_of(st.none(), st.text(max_size=5)),
    st.dictionaries(st.text(max_size=6), values, max_size=5),
)
frames = st.lists(st.tuples(st.integers(-(2**40), 2**40), st.lists(events, max_size=4)), max_size=3)


@settings(max_examples=150, deadline=None)
@given(frame=frames, slice_work=st.sampled_from([1, 2, 3, 7, 20_000]))
def test_a_frame_is_what_marshal_writes_for_the_whole(frame: list[Any], slice_work: int) -> None:
    # Tiny slices force every field through the sliced path.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(event_frames, "SLICE_WORK", slice_work)
        written = event_frames.dumps(frame)
    assert written == marshal.dumps(frame, event_frames.VERSION)
    assert marshal.loads(written) == frame


def target_event(members: int, topics: int) -> tuple[Any, ...]:
    assignments = {
        f"member-{m}": tuple((f"topic-{t}", (m,)) for t in range(topics)) for m in range(members)
    }
    fields = {"group_type": "consumer", "assignor": "uniform", "assignments": assignments}
    return ("target_assignment", 1, "big", 7, None, fields)


def test_a_large_target_is_marshalled_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = [(0, [target_event(members=2_000, topics=50)])]  # 100,000 (topic, partition) pairs
    sizes: list[int] = []
    real = marshal.dumps

    def counting(value: Any, version: int) -> bytes:
        out = real(value, version)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(event_frames.marshal, "dumps", counting)
    written = event_frames.dumps(frame)
    monkeypatch.undo()
    whole = marshal.dumps(frame, event_frames.VERSION)
    assert written == whole
    # No call wrote more than a few slices' worth: each (topic, (partition,)) pair is ~25 bytes.
    assert max(sizes) < 30 * event_frames.SLICE_WORK
    assert len(whole) > 5 * max(sizes)
