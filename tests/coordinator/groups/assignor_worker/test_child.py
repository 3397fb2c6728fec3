"""The assignor worker's child process (`python -m coordinator.groups.assignor_worker.child`),
fed messages on its standard input until it ends (each run here waits for its exit): it
computes on its copy exactly the target `compute_target` gives inline, with the target records
`record_codec` would store, from deltas alone; it reports an assignor's failure as `Failed` and
forgets that group; it echoes a priming and reports its own peak resident set."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import coordinator
from coordinator.groups import record_codec
from coordinator.groups.assignor_worker.messages import (
    Compute,
    Delta,
    Failed,
    Forget,
    Prime,
    Primed,
    Reply,
    Request,
    Result,
    Stats,
    StatsRequest,
    encode,
    read_reply,
)
from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.records import ConsumerGroupRecord, TargetMemberValue
from rebalance.consumer_group.target import TargetInputs, compute_target
from rebalance.topics import TopicInfo, TopicMetadata

METADATA = TopicMetadata.of([TopicInfo("t", "id-t", 6), TopicInfo("u", "id-u", 3)])
MEMBERS = (
    MemberInputs("m1", ("t", "u"), None, None, None),
    MemberInputs("m2", ("t",), None, None, None),
    MemberInputs("m3", ("t", "u"), None, None, None),
)


def run_child(requests: list[Request]) -> list[Reply]:
    """The child's replies to `requests`, once it has ended at the end of its input."""
    source = str(Path(coordinator.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": source}
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.groups.assignor_worker.child"],
        input=b"".join(map(encode, requests)),
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    stream = io.BytesIO(done.stdout)
    replies = []
    while (reply := read_reply(stream)) is not None:
        replies.append(reply)
    return replies


def test_the_child_computes_from_deltas_the_inline_target() -> None:
    first = TargetInputs("g", 1, "uniform", METADATA, MEMBERS, {})
    inline = compute_target(first).changed
    # the next epoch: m2 leaves; the child is sent only that, and the targets it computed
    second = TargetInputs("g", 2, "uniform", METADATA, MEMBERS[::2], inline)
    then = compute_target(second).changed
    replies = run_child([
        Delta("g", METADATA, [], list(MEMBERS), {}),
        Compute("g", 1, 1, "uniform", None),
        Delta("g", None, ["m2"], [], {"m2": None}),
        Compute("g", 2, 2, "uniform", None),
    ])  # fmt: skip
    assert [type(r) for r in replies] == [Result, Result]
    one, two = replies
    assert isinstance(one, Result) and isinstance(two, Result)
    assert (one.job, one.last, one.chunk) == (1, True, inline)
    assert (two.job, two.last, two.chunk) == (2, True, then)
    for member_id, assignment in then.items():
        record = ConsumerGroupRecord("g", TargetMemberValue(member_id, assignment))
        assert two.rows[member_id] == record_codec.encode(record)


def test_a_failing_assignor_is_reported_and_its_group_forgotten() -> None:
    replies = run_child([
        Delta("g", METADATA, [], list(MEMBERS), {}),
        Compute("g", 1, 1, "no-such-assignor", None),
        Compute("g", 2, 2, "uniform", None),  # the copy is gone: no members, nothing to assign
    ])  # fmt: skip
    failed, after = replies
    assert isinstance(failed, Failed) and failed.job == 1 and "no-such-assignor" in failed.message
    assert after == Result(2, {}, {}, True)


def test_a_priming_is_echoed_and_stats_are_the_childs_own() -> None:
    replies = run_child([
        Delta("g", METADATA, [], list(MEMBERS), {}),
        Prime("g", 7, "uniform"),
        Prime("unknown", 8, "range"),  # a group it does not hold: echoed all the same
        Forget("g"),
        StatsRequest(9),
    ])  # fmt: skip
    assert replies[:2] == [Primed(7), Primed(8)]
    stats = replies[2]
    assert isinstance(stats, Stats) and stats.job == 9
    assert 10 * 2**20 < stats.peak_rss_bytes < 2**31  # a whole interpreter's
