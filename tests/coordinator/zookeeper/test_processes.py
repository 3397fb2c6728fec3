"""Starting a server as a child process: waited for until its probe says it serves, or told why
not (it exited, or the time ran out, with its log's tail); a launch tried again after a failure
(the failed one stopped), not after a failure that would recur; when none serves, the scratch
directory goes and the caller's error is raised; a process group stopped with SIGTERM, then
SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from coordinator.zookeeper.processes import (
    GiveUp,
    first_serving,
    stop_process_group,
    wait_until_serving,
)


@dataclass
class Child:
    """A real child process that serves once `ready` exists."""

    process: subprocess.Popen[bytes]
    ready: Path
    stopped: list[int] = field(default_factory=list)

    @classmethod
    def run(cls, code: str, ready: Path) -> Child:
        return cls(subprocess.Popen([sys.executable, "-c", code]), ready)

    def serving(self) -> bool:
        if not self.ready.exists():
            raise OSError("nothing listening yet")
        return True

    def log_tail(self) -> str:
        return "the log's tail"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.stopped.append(self.process.pid)


def test_a_child_is_waited_for_until_it_serves(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    touch = f"pathlib.Path({str(ready)!r}).touch()"
    child = Child.run(f"import time, pathlib; time.sleep(0.2); {touch}; time.sleep(30)", ready)
    try:
        assert wait_until_serving(child, 20) == ""
    finally:
        child.stop()


def test_an_exit_or_the_timeout_says_why(tmp_path: Path) -> None:
    exited = Child.run("raise SystemExit(3)", tmp_path / "never")
    assert wait_until_serving(exited, 20) == "exited with status 3: the log's tail"
    silent = Child.run("import time; time.sleep(30)", tmp_path / "never")
    try:
        assert wait_until_serving(silent, 0.2) == "not serving after 0 s: the log's tail"
    finally:
        silent.stop()


def test_a_failed_launch_is_stopped_and_tried_again(tmp_path: Path) -> None:
    launched: list[Child] = []

    def launch() -> Child:
        ready = tmp_path / f"ready-{len(launched)}"
        if launched:  # the second one serves
            ready.touch()
        launched.append(Child.run("import time; time.sleep(30)", ready))
        return launched[-1]

    server = first_serving(3, launch, 0.3, None, RuntimeError)
    try:
        assert server is launched[1] and launched[0].stopped and not server.stopped
    finally:
        server.stop()


def test_when_none_serves_the_scratch_goes_and_the_error_is_raised(tmp_path: Path) -> None:
    scratch = tempfile.TemporaryDirectory(prefix="processes-")
    tries: list[int] = []

    def launch() -> Child:
        tries.append(1)
        return Child.run("raise SystemExit(1)", tmp_path / "never")

    with pytest.raises(RuntimeError, match=r"^did not start: exited with status 1"):
        first_serving(2, launch, 5, scratch, lambda p: RuntimeError(f"did not start: {p}"))
    assert len(tries) == 2 and not Path(scratch.name).exists()

    def recurring() -> Child:
        tries.append(1)
        raise GiveUp("bad configuration")

    with pytest.raises(RuntimeError, match=r"^bad configuration$"):
        first_serving(3, recurring, 5, None, RuntimeError)
    assert len(tries) == 3  # tried once


def test_a_process_group_that_ignores_sigterm_is_killed_after_the_timeout() -> None:
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(30)"
    process = subprocess.Popen([sys.executable, "-c", stubborn], start_new_session=True)
    polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                              start_new_session=True)  # fmt: skip
    time.sleep(0.3)  # both have started
    stop_process_group(polite, 10)
    assert polite.returncode == -signal.SIGTERM
    stop_process_group(process, 0.3)
    assert process.returncode == -signal.SIGKILL
    stop_process_group(process, 0.3)  # already gone: nothing
