"""`rebalance` run as users run it, in a process of its own, for the tests of what it says."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

REBALANCE = [sys.executable, "-m", "coordinator.cli.main"]
STARTED: list[int] = []
"""The pid of every server `start_serve` started: the conftest kills any a failed test left."""


async def start_serve(
    data_dir: Path, *extra: str, new_session: bool = False
) -> tuple[asyncio.subprocess.Process, int]:
    """`rebalance serve` on an ephemeral loopback port; returns once it listens."""
    process = await asyncio.create_subprocess_exec(
        *REBALANCE, "serve", "--bind", "127.0.0.1:0", "--data-dir", str(data_dir), *extra,
        stderr=asyncio.subprocess.PIPE, start_new_session=new_session,
    )  # fmt: skip
    STARTED.append(process.pid)
    assert process.stderr is not None
    while True:
        line = (await asyncio.wait_for(process.stderr.readline(), timeout=30)).decode()
        assert line, "server exited before listening"
        if found := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
            return process, int(found.group(1))


async def stop(process: asyncio.subprocess.Process) -> str:
    """SIGTERM; the rest of its stderr, once it has exited with status 0."""
    process.send_signal(signal.SIGTERM)
    return await finish(process)


async def finish(process: asyncio.subprocess.Process) -> str:
    assert process.stderr is not None
    rest = await asyncio.wait_for(process.stderr.read(), timeout=60)
    assert await process.wait() == 0, rest.decode()
    return rest.decode()


def kill_leftovers() -> None:
    """SIGKILL the servers still running (their writers see their input end and exit)."""
    while STARTED:
        pid = STARTED.pop()
        with contextlib.suppress(OSError):  # exited (and maybe reaped) meanwhile
            if alive(pid) and b"coordinator.cli.main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)


def run_rebalance(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REBALANCE, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


async def refused_start(data_dir: Path, *extra: str) -> str:
    """`rebalance serve` on `data_dir` must refuse (exit status 1); the one line it said."""
    refused = await asyncio.to_thread(
        run_rebalance, "serve", "--data-dir", str(data_dir), "--bind", "127.0.0.1:0", *extra
    )
    assert refused.returncode == 1, refused.stderr
    return one_line(refused.stderr)


def one_line(stderr: str) -> str:
    """The only line of `stderr` (a failure says one line, never a traceback)."""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def children(pid: int) -> list[int]:
    """Live child processes of `pid`, from /proc."""
    found: list[int] = []
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(child) for child in listing.read_text().split()]
    return [child for child in found if alive(child)]


def alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie is reaped by init, not by us)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file below `directory`: size and modification time, to prove nothing changed."""
    return {
        str(path.relative_to(directory)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    } | {"": (0, os.stat(directory).st_mtime_ns)}
