"""One server per data dir: a second one refuses before touching anything, naming the dir and
the holder's pid; the kernel drops the lock with its holder, so `kill -9` never blocks a restart.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from serve_process import (
    alive,
    children,
    one_line,
    refused_start,
    run_rebalance,
    snapshot,
    start_serve,
    stop,
)

from coordinator.node.data_dir import DataDirError, DataDirInUseError, DirectoryLock
from coordinator.testing.server import WireClient, running_server


def test_a_second_lock_in_the_same_process_is_refused_naming_this_process(tmp_path: Path) -> None:
    held = DirectoryLock.acquire(tmp_path)
    with pytest.raises(DataDirInUseError) as refused:
        DirectoryLock.acquire(tmp_path)
    message = str(refused.value)
    assert f"data dir {tmp_path} is in use by this process (pid {os.getpid()}" in message
    assert f"{tmp_path}/.lock" in message
    held.release()
    DirectoryLock.acquire(tmp_path).release()  # released means free again
    assert (tmp_path / ".lock").read_text() == f"{os.getpid()}\n"


def test_only_the_directory_itself_is_created_and_removed_if_asked(tmp_path: Path) -> None:
    with pytest.raises(DataDirError, match=r"its parent .*/missing does not exist"):
        DirectoryLock.acquire(tmp_path / "missing" / "data")
    assert not (tmp_path / "missing").exists()
    lock = DirectoryLock.acquire(tmp_path / "data")
    assert lock.created
    lock.release(remove_created=True)
    assert not (tmp_path / "data").exists()
    (tmp_path / "kept").mkdir()
    existing = DirectoryLock.acquire(tmp_path / "kept")
    existing.release(remove_created=True)
    assert (tmp_path / "kept").is_dir()


def test_a_file_is_no_data_dir(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(DataDirError, match=r"/file is not a directory; choose another --data-dir"):
        DirectoryLock.acquire(tmp_path / "file")


async def test_embedded_servers_share_no_data_dir(tmp_path: Path) -> None:
    async with running_server(data_dir=tmp_path):
        before = snapshot(tmp_path)
        with pytest.raises(DataDirInUseError, match="in use by this process"):
            async with running_server(data_dir=tmp_path):
                pass
        assert snapshot(tmp_path) == before
    async with running_server(data_dir=tmp_path) as again:  # stopped: free again
        assert again.data_dir == tmp_path


async def test_a_second_server_refuses_and_kill_9_never_blocks_a_restart(tmp_path: Path) -> None:
    first, port = await start_serve(tmp_path, "--topic", "orders:2")
    writer = children(first.pid)
    assert len(writer) == 1  # the event log's writer, the server's only child
    events = tmp_path / "events" / "events-000001.jsonl"
    while not events.exists() or events.read_text().count("\n") < 50:  # partitions loaded
        await asyncio.sleep(0.05)
    before = snapshot(tmp_path)

    second = await asyncio.to_thread(
        run_rebalance, "serve", "--data-dir", str(tmp_path), "--bind", "127.0.0.1:0"
    )
    assert second.returncode == 1
    assert one_line(second.stderr) == (
        f"rebalance serve: data dir {tmp_path} is in use by process {first.pid} (it holds "
        f"{tmp_path}/.lock); stop it, or choose another --data-dir"
    )
    with pytest.raises(DataDirInUseError, match=f"in use by process {first.pid} "):
        async with running_server(data_dir=tmp_path):  # embedded: refused too
            pass
    assert snapshot(tmp_path) == before  # touched nothing

    first.send_signal(signal.SIGKILL)
    assert await first.wait() == -signal.SIGKILL
    restarted, port = await start_serve(tmp_path)
    client = await WireClient.connect("127.0.0.1", port)
    metadata = await client.request(3, 12, {"topics": None})
    assert [t.name for t in metadata.topics if not t.is_internal] == ["orders"]
    await client.close()
    await stop(restarted)
    for _ in range(100):  # the killed server's writer saw its input end and left
        if not alive(writer[0]):
            break
        await asyncio.sleep(0.1)
    assert not alive(writer[0])


async def test_a_second_server_on_a_live_servers_event_log_is_refused(tmp_path: Path) -> None:
    first, _port = await start_serve(tmp_path / "first")
    events = tmp_path / "first" / "events"
    while not (events / "events-000001.jsonl").exists():
        await asyncio.sleep(0.05)
    before = snapshot(events)
    assert await refused_start(tmp_path / "second", "--event-log", str(events)) == (
        f"rebalance serve: event log dir {events} is in use by process {first.pid} (it holds "
        f"{events}/.lock); stop it, or choose another --event-log"
    )
    assert snapshot(events) == before  # no second file beside the first's
    assert not (tmp_path / "second").exists()  # nor anything of its own left behind
    await stop(first)
