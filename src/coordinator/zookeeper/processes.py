"""Starting a server as a child process (ZooKeeper's here, the testing peers' Kafka broker above
this rung): launched a few times if need be (another free port each time), waited for until
it serves (polled until its probe says so, the process exits, or the time is up), stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

POLL_S = 0.05


class ChildServer(Protocol):
    @property
    def process(self) -> subprocess.Popen[bytes]: ...

    def serving(self) -> bool:
        """Whether it answers as a started server (`OSError`: nothing listening yet)."""

    def log_tail(self) -> str: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=ChildServer)


class GiveUp(Exception):
    """Raised by a launch whose failure another launch would meet alike."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def wait_until_serving(server: ChildServer, timeout_s: float) -> str:
    """'' once `server.serving()`, else what went wrong (the exit status or the timeout, with
    the tail of its log)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return f"exited with status {server.process.returncode}: {server.log_tail()}"
        with contextlib.suppress(OSError):
            if server.serving():
                return ""
        time.sleep(POLL_S)
    return f"not serving after {timeout_s:.0f} s: {server.log_tail()}"


def first_serving(
    attempts: int,
    launch: Callable[[], S],
    timeout_s: float,
    scratch: tempfile.TemporaryDirectory[str] | None,
    unavailable: Callable[[str], Exception],
) -> S:
    """The first server `launch` starts that serves within `timeout_s`, in `attempts` tries (one
    that does not is stopped: a port race, tried again); else `scratch` is removed and
    `unavailable(problem)` raised."""
    problem = "not tried"
    for _ in range(attempts):
        try:
            server = launch()
        except GiveUp as final:
            problem = final.problem
            break
        problem = wait_until_serving(server, timeout_s)
        if not problem:
            return server
        server.stop()
    if scratch is not None:
        scratch.cleanup()
    raise unavailable(problem)


def stop_process_group(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM the process's group (its own session: `start_new_session`), SIGKILL it if it has
    not exited within `timeout_s`."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        kill_process_group(process)


def kill_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process's group (a crash) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
