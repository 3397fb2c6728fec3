"""The event log writer: every accepted event is written, files rotate by size, a failing disk
neither hangs the server nor goes unreported, and a writer whose server died exits."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from serve_process import alive

from assignors.consumer_protocol import Assignment, encode_assignment
from coordinator.groups.event_log.log import PARENT_CHECK_SECONDS, EventLog
from rebalance.event_schema import check_event
from rebalance.events import Event
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE
from rebalance.testing import GroupHarness


def commit(ts: int, group: str = "g") -> Event:
    return Event("offset_commit", ts, group, 1, "m", {"partitions": 1})


def lines(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("events-*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def test_every_event_accepted_is_written_on_close(tmp_path: Path) -> None:
    log = EventLog(tmp_path, node_id=7)
    for i in range(0, 3000, 3):
        log.emit([commit(i), commit(i + 1), commit(i + 2)], monotonic_offset_ms=1_000_000)
    log.close()
    written = lines(tmp_path)
    assert [e["ts"] for e in written] == [1_000_000 + i for i in range(3000)]
    assert {e["node"] for e in written} == {7}
    assert written[0] == {
        "v": 2, "ts": 1_000_000, "node": 7, "type": "offset_commit", "group": "g",
        "generation": 1, "member": "m", "partitions": 1,
    }  # fmt: skip


def test_the_cores_own_events_cross_to_the_writer_whole(tmp_path: Path) -> None:
    """Triggers and reasons are enums in the core; the writer gets and writes plain values."""
    h = GroupHarness()
    h.form_group("g", 2)
    h.advance(10_001)  # both sessions expire: member_expired, rebalance_started, group_empty
    log = EventLog(tmp_path, node_id=1)
    log.emit(h.events, monotonic_offset_ms=0)
    log.close()
    written = lines(tmp_path)
    assert [e["type"] for e in written] == [str(e.type) for e in h.events]
    assert [check_event(e) for e in written] == [None] * len(written)
    assert {e["reason"] for e in written if e["type"] == "member_expired"} == {"session_timeout"}


def test_events_after_close_are_ignored(tmp_path: Path) -> None:
    log = EventLog(tmp_path, node_id=1)
    log.close()
    log.emit([commit(1)], 0)
    log.close()
    assert lines(tmp_path) == []


def test_files_rotate_by_size_and_numbering_continues(tmp_path: Path) -> None:
    log = EventLog(tmp_path, node_id=1, max_bytes=1024)
    log.emit([commit(i) for i in range(100)], 0)
    log.close()
    files = sorted(tmp_path.glob("events-*.jsonl"))
    assert len(files) > 5
    assert all(f.stat().st_size <= 1024 for f in files)
    assert [f.name for f in files][:2] == ["events-000001.jsonl", "events-000002.jsonl"]
    again = EventLog(tmp_path, node_id=1, max_bytes=1024)
    again.emit([commit(100)], 0)
    again.close()
    newest = sorted(tmp_path.glob("events-*.jsonl"))[-1]
    assert newest.name == f"events-{len(files) + 1:06d}.jsonl"
    assert [e["ts"] for e in lines(tmp_path)] == list(range(101))


def test_sync_completed_assignments_are_decoded_by_the_writer(tmp_path: Path) -> None:
    raw = encode_assignment(Assignment((("orders", 0), ("orders", 2))), version=0)
    fields = {"assignments": {"a": raw}, "protocol_type": CONSUMER_PROTOCOL_TYPE}
    log = EventLog(tmp_path, node_id=1)
    log.emit([Event("sync_completed", 5, "g", 3, None, fields)], 0)
    log.close()
    (event,) = lines(tmp_path)
    assert event["assignments"] == {"a": [["orders", [0, 2]]]}
    assert event["sizes"] == {"a": len(raw)}


def test_a_write_failure_is_reported_and_close_still_returns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "events"
    log = EventLog(directory, node_id=1)
    shutil.rmtree(directory)
    directory.write_text("a file where the log directory was")
    for i in range(200):
        log.emit([commit(i)], 0)
    started = time.monotonic()
    log.close()
    assert time.monotonic() - started < 30
    assert "event log writer failed; events are not written until it can write" in caplog.text
    assert "NotADirectoryError" in caplog.text


def test_a_writer_that_failed_writes_again_once_it_can(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "events"
    log = EventLog(directory, node_id=1, max_bytes=1024)
    log.emit([commit(0)], 0)
    wait_for(lambda: log.written == 1)
    shutil.rmtree(directory)  # an operator's mistake: the log directory removed
    for ts in range(1, 20):  # enough to fill the open file: the next one cannot be created
        log.emit([commit(ts)], 0)
    wait_for(lambda: "event log writer failed" in caplog.text)
    directory.mkdir()  # and put back
    ts = 20
    while "writes again" not in caplog.text:  # the writer retries with the events that arrive
        log.emit([commit(ts)], 0)
        ts += 1
        time.sleep(0.05)
    log.emit([commit(10_000)], 0)
    log.close()
    written = [e["ts"] for e in lines(directory)]
    assert written[-1] == 10_000 and written == sorted(written)
    assert 19 not in written  # lost, and counted in the warning
    assert "up to" in caplog.text


def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_bad_directory_fails_when_the_log_is_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError):
        EventLog(blocker / "events", node_id=1)


ORPHAN = """
import os, signal, sys, time
from pathlib import Path
from coordinator.groups.event_log.log import EventLog
from rebalance.event_schema import check_event
from rebalance.events import Event
from rebalance.testing import GroupHarness
log = EventLog(Path(sys.argv[1]), node_id=1)
log.emit([Event("offset_commit", 1, "g", 1, "m", {"partitions": 1})], 0)
time.sleep(1.0)  # the writer has it by now
print(log.writer_pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_writer_whose_server_was_killed_writes_what_it_has_and_exits(tmp_path: Path) -> None:
    server = subprocess.run(
        [sys.executable, "-c", ORPHAN, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert server.returncode == -9, server.stderr
    writer = int(server.stdout.split()[-1])
    deadline = time.monotonic() + 15
    while alive(writer) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(writer)
    assert [e["ts"] for e in lines(tmp_path)] == [1]


def test_large_non_consumer_syncs_are_written_whole(tmp_path: Path) -> None:
    log = EventLog(tmp_path, node_id=1)
    big = {"assignments": {f"m{i}": b"\x00" * 64 for i in range(1000)}, "protocol_type": "x"}
    for i in range(50):
        log.emit([Event("sync_completed", i, "g", 1, None, big)], 0)
    log.close()
    written = lines(tmp_path)
    assert [e["ts"] for e in written] == list(range(50))
    assert all(e["assignments"] == {f"m{i}": None for i in range(1000)} for e in written)
    assert all(set(e["sizes"].values()) == {64} for e in written)


DAEMON = """
import multiprocessing, sys
from pathlib import Path
from coordinator.groups.event_log.log import EventLog
from rebalance.event_schema import check_event
from rebalance.events import Event
from rebalance.testing import GroupHarness

def log_one(directory):
    log = EventLog(directory, 1)
    log.emit([Event("offset_commit", 1, "g", 1, "m", {"partitions": 1})], 0)
    log.close()

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=log_one, args=(Path(sys.argv[1]),), daemon=True)
    child.start()
    child.join()
    print("exit", child.exitcode)
"""


def test_a_daemonic_process_can_run_the_log(tmp_path: Path) -> None:
    """multiprocessing forbids daemonic processes children of its own; the writer is not one."""
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "events")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.stdout.split() == ["exit", "0"], done.stderr
    assert [e["ts"] for e in lines(tmp_path / "events")] == [1]


async def test_on_a_loop_every_event_is_written_in_order(tmp_path: Path) -> None:
    log = EventLog(tmp_path, node_id=1)
    for i in range(0, 300, 3):
        log.emit([commit(i)], 0)
        log.emit([commit(i + 1), commit(i + 2)], 0)  # same loop iteration: handed over together
        if i % 30 == 0:
            await asyncio.sleep(0)
    log.emit([commit(300)], 0)  # still pending when the log closes
    log.close()
    assert [e["ts"] for e in lines(tmp_path)] == list(range(301))


def test_an_idle_writer_keeps_writing(tmp_path: Path) -> None:
    log = EventLog(tmp_path, node_id=1)
    log.emit([commit(1)], 0)
    time.sleep(PARENT_CHECK_SECONDS * 2.5)  # idle across several checks on the server's life
    log.emit([commit(2)], 0)
    log.close()
    assert [e["ts"] for e in lines(tmp_path)] == [1, 2]
