"""The event log's writer process: one small child started from its own file, whatever script
embeds the server; a writer that dies costs one error with a count, never the server; a SIGTERM
to the whole process group is a clean stop; its lines are exactly `Event.to_json_dict`'s."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from serve_process import alive, children, start_serve

from assignors.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from coordinator.groups.event_log.log import EventLog
from coordinator.groups.event_log.writer import assigned_partitions, event_line, owned_partitions
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.testing.server import WireClient, running_server
from coordinator.wire.api_keys import ApiKey
from rebalance.events import Event
from rebalance.subscription import assigned_partitions as reference_partitions
from rebalance.subscription import owned_partitions as reference_owned
from rebalance.testing import GroupHarness

MAX_WRITER_RSS_MB = 30


def commit(ts: int) -> Event:
    return Event("offset_commit", ts, "g", 1, "m", {"partitions": 1})


def written(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("events-*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def wait_until(condition: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def big_sync(ts: int, members: int = 1000) -> Event:
    raw = {
        f"member-{i}": encode_assignment(Assignment(tuple(("orders", p) for p in range(i, i + 3))))
        for i in range(members)
    }
    fields = {"assignments": raw, "protocol_type": "consumer"}
    return Event("sync_completed", ts, "g", 1, None, fields)


def test_the_writer_is_one_small_process(tmp_path: Path) -> None:
    log = EventLog(tmp_path, node_id=1)
    pid = log.writer_pid
    assert pid is not None
    assert children(os.getpid()).count(pid) == 1
    # Popen returns once exec is past its point of no return, which is before the kernel has
    # set the new program's arguments: for a moment /proc shows an empty command line.
    wait_until(lambda: Path(f"/proc/{pid}/cmdline").read_bytes() != b"")
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert command[:3] == [sys.executable.encode(), b"-I", b"event_log_writer.py"] or (
        command[1] == b"-I" and command[2].endswith(b"coordinator/groups/event_log/writer.py")
    )
    for i in range(20):  # 1000-member syncs and commits: decoding, serialising, rotating
        log.emit([big_sync(i), *(commit(i) for _ in range(500))], 0)
    wait_until(lambda: log.written == 20 * 501)
    assert rss_mb(pid) <= MAX_WRITER_RSS_MB
    log.close()
    assert not alive(pid)


def test_a_writer_that_dies_is_one_error_with_the_count_and_nothing_else_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = EventLog(tmp_path, node_id=1)
    log.emit([commit(1)], 0)
    wait_until(lambda: log.written == 1)
    pid = log.writer_pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # sent, never written: these 5 are lost with it
    for ts in range(2, 7):
        log.emit([commit(ts)], 0)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: log.lost == 5)
    for ts in range(7, 10):
        log.emit([commit(ts)], 0)  # the server goes on; these are counted, not sent
    log.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        f"event log writer (pid {pid}) was killed by signal 9: 5 events not written; the "
        "server keeps serving without its event log"
    ]
    assert "3 more events were not written after the writer died" in caplog.text
    assert [e["ts"] for e in written(tmp_path)] == [1]


async def test_a_server_whose_writer_dies_keeps_serving(caplog: pytest.LogCaptureFixture) -> None:
    groups = GroupCoordinatorExtension()
    async with running_server(groups=groups, topics=[("t", 1)]) as node:
        assert groups.runtime is not None and groups.runtime.events is not None
        pid = groups.runtime.events.writer_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        while alive(pid):
            await asyncio.sleep(0.01)
        client = await WireClient.connect(node.host, node.port)
        for offset in range(3):
            response = await client.request(ApiKey.OFFSET_COMMIT, 2, {"group_id": "g",
                "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                "topics": [{"name": "t", "partitions": [{"partition_index": 0,
                "committed_offset": offset, "committed_metadata": ""}]}]})  # fmt: skip
            assert response.topics[0].partitions[0].error_code == 0
        await client.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].startswith(f"event log writer (pid {pid}) was killed by signal 9: ")


def test_the_writer_stops_at_the_end_of_its_input_not_on_signals(tmp_path: Path) -> None:
    """systemd signals every process of a service; the writer finishes what the server sends."""
    log = EventLog(tmp_path, node_id=1)
    log.emit([commit(1)], 0)
    wait_until(lambda: log.written == 1)  # running its own code: ignoring what it should
    pid = log.writer_pid
    assert pid is not None
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        os.kill(pid, signum)
    log.emit([commit(2)], 0)
    wait_until(lambda: log.written == 2)
    assert alive(pid)
    log.close()
    assert not alive(pid)
    assert [e["ts"] for e in written(tmp_path)] == [1, 2]


SCRIPT = """
import asyncio
from coordinator.testing.server import WireClient, running_server
from coordinator.wire.api_keys import ApiKey

async def main():
    async with running_server(data_dir=DATA, topics=[("t", 1)]) as node:
        client = await WireClient.connect(node.host, node.port)
        await client.request(ApiKey.OFFSET_COMMIT, 2, {"group_id": "embedded",
            "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 7, "committed_metadata": ""}]}]})
        await client.close()

asyncio.run(main())  # no main guard: the writer must not run this again
print("done")
"""


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_server_embedded_in_any_script_logs_its_events(tmp_path: Path, how: str) -> None:
    data = tmp_path / "data"
    script = f"from pathlib import Path\nDATA = Path({str(data)!r})\n" + SCRIPT
    if how == "file":
        (tmp_path / "embed.py").write_text(script)
        command, given_stdin = [sys.executable, str(tmp_path / "embed.py")], None
    else:
        command, given_stdin = [sys.executable, "-"], script
    done = subprocess.run(
        command, input=given_stdin, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "done\n", "")
    commits = [e for e in written(data / "events") if e["type"] == "offset_commit"]
    assert [e["group"] for e in commits] == ["embedded"]


async def test_sigterm_to_the_process_group_is_a_clean_stop(tmp_path: Path) -> None:
    server, port = await start_serve(tmp_path, "--topic", "t:1", new_session=True)
    (writer,) = children(server.pid)
    client = await WireClient.connect("127.0.0.1", port)
    await client.request(ApiKey.OFFSET_COMMIT, 2, {"group_id": "g",
        "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]})  # fmt: skip
    await client.close()
    os.killpg(server.pid, signal.SIGTERM)  # as systemd stops a service: every process
    assert server.stderr is not None
    stderr = (await asyncio.wait_for(server.stderr.read(), timeout=60)).decode()
    assert await server.wait() == 0
    assert stderr.splitlines()[-1].endswith("INFO coordinator.serve: stopped")
    assert " WARNING " not in stderr and " ERROR " not in stderr  # the writer stopped well too
    assert not alive(writer)
    assert [e["group"] for e in written(tmp_path / "events") if e["type"] == "offset_commit"] == [
        "g"
    ]


def harness_events() -> list[Event]:
    """What a real group produces: joins, a consumer-protocol sync, commits, expirations."""
    h = GroupHarness()
    h.form_group("grüppe ✓", 3)
    h.advance(10_001)
    return h.events


ODD_EVENTS = [
    Event("partition_loaded", 5, None, None, None, {"partition": 3, "groups": 0}),
    Event("commit_fenced", 6, "", 2, None, {"error": "ILLEGAL_GENERATION", "code": 22}),
    Event(
        "member_joined",
        7,
        "g",
        0,
        "m",
        {"client_id": "c", "instance_id": None, "protocols": ["range", "sticky"]},
    ),
    big_sync(8, members=5),
    Event(
        "sync_completed",
        9,
        "g",
        1,
        None,
        {"protocol_type": "connect", "assignments": {"w": b"\x00\x01"}},
    ),
    Event(
        "sync_completed",
        10,
        "g",
        1,
        None,
        {
            "protocol_type": "consumer",
            "assignments": {
                "empty": b"",
                "garbage": b"\x00\x00\xff",
                "v3": encode_assignment(
                    Assignment((("b", 1), ("a", 0), ("b", 0)), user_data=b"x"), version=3
                ),
            },
        },
    ),
    Event(
        "join_completed",
        11,
        "g",
        2,
        None,
        {
            "leader": "v3",
            "protocol": "cooperative-sticky",
            "members": ["v0", "v3", "garbage"],
            "protocol_type": "consumer",
            "subscriptions": {
                "v0": encode_subscription(Subscription(("a",), owned_partitions=()), version=0),
                "v3": encode_subscription(
                    Subscription(("a", "b"), b"u", (("b", 1), ("a", 0), ("b", 0)), 4, "r1")
                ),
                "garbage": b"\x00\x01\xff",
            },
        },
    ),
    Event(
        "join_completed",
        12,
        "g",
        3,
        None,
        {
            "leader": "w",
            "protocol": "x",
            "members": ["w"],
            "protocol_type": "connect",
            "subscriptions": {"w": b"\x00\x01"},
        },
    ),
]


@pytest.mark.parametrize("event", harness_events() + ODD_EVENTS, ids=lambda e: e.type)
def test_the_writers_lines_are_the_reference_ones(event: Event) -> None:
    reference = event.to_json_dict(7)
    reference["ts"] = event.ts + 1_000
    expected = json.dumps(reference, separators=(",", ":"), ensure_ascii=False) + "\n"
    as_sent = (event.type, event.ts, event.group, event.generation, event.member, event.fields)
    assert event_line(as_sent, 1_000, 7) == expected.encode()


topics = st.text(min_size=0, max_size=5)
partitions = st.lists(st.tuples(topics, st.integers(-(2**31), 2**31 - 1)), max_size=8)


@st.composite
def assignment_bytes(draw: st.DrawFn) -> bytes:
    """Valid Assignments of every version, then maybe cut, extended or with a byte changed."""
    data = encode_assignment(
        Assignment(tuple(draw(partitions)), user_data=draw(st.none() | st.binary(max_size=8))),
        version=draw(st.integers(0, 3)),
    )
    if draw(st.booleans()):
        data = draw(st.integers(0, 0x7FFF)).to_bytes(2, "big") + data[2:]  # a future version
    edit = draw(st.sampled_from(["none", "cut", "append", "flip"]))
    if edit == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif edit == "append":
        data += draw(st.binary(min_size=1, max_size=6))
    elif edit == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    return data


@given(assignment_bytes() | st.binary(max_size=40))
def test_the_writers_assignment_reader_agrees_with_the_protocol_codec(data: bytes) -> None:
    assert assigned_partitions(data) == reference_partitions(data)


@st.composite
def subscription_bytes(draw: st.DrawFn) -> bytes:
    """Valid Subscriptions of every version, then maybe cut, extended or with a byte changed."""
    subscription = Subscription(
        tuple(draw(st.lists(topics, max_size=3))),
        draw(st.none() | st.binary(max_size=8)),
        tuple(draw(partitions)),
        draw(st.integers(-1, 9)),
        draw(st.none() | topics),
    )
    data = encode_subscription(subscription, version=draw(st.integers(0, 3)))
    if draw(st.booleans()):
        data = draw(st.integers(0, 0x7FFF)).to_bytes(2, "big") + data[2:]  # a future version
    edit = draw(st.sampled_from(["none", "cut", "append", "flip"]))
    if edit == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif edit == "append":
        data += draw(st.binary(min_size=1, max_size=6))
    elif edit == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    return data


@given(subscription_bytes() | st.binary(max_size=40))
def test_the_writers_subscription_reader_agrees_with_the_protocol_codec(data: bytes) -> None:
    assert owned_partitions(data) == reference_owned(data)
