"""A real ZooKeeper server on a free loopback port, for tests, the demo and benchmarks.

`ZooKeeperServer.start()` runs ZooKeeper's standalone server (`ZooKeeperServerMain`) from the
jars of Debian's `zookeeper` package (installed by `scripts/ensure-zookeeper`) in a JVM of its
own, with a generated `zoo.cfg`: client port on 127.0.0.1 only, a temporary data dir, the admin
HTTP server off (it would take port 8080), no per-address connection limit (every consumer of a
benchmark connects from 127.0.0.1), and session timeouts from `2 * tick_ms` up, so a test can
let sessions expire in a second. It returns once the server answers the `srvr` command with
`Mode: standalone`. Nothing here touches the package's system service.

`ZOOKEEPER_CLASSPATH` overrides where the jars are; `JAVA` which java runs them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.zookeeper.processes import first_serving, stop_process_group

DEBIAN_CLASSPATH = ("/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar")
"""The server and its dependencies (the jar's manifest lists them) and a logging binding."""
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
"""A small heap and the quick-starting JIT tier: a test server holds a few thousand znodes."""
PR_SET_PDEATHSIG = 1
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class ZooKeeperUnavailable(RuntimeError):
    """No ZooKeeper server could be started here (jars or java missing, or it failed)."""


def die_with_parent() -> None:
    """In a child between fork and exec (`preexec_fn`): let the kernel SIGKILL it when the
    process that started it dies, however that happens (Linux `PR_SET_PDEATHSIG`; nothing
    elsewhere). A test run or demo killed outright then leaves no server or member behind."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def classpath() -> str:
    override = os.environ.get("ZOOKEEPER_CLASSPATH")
    if override:
        return override
    if not Path(DEBIAN_CLASSPATH[0]).is_file():
        raise ZooKeeperUnavailable(
            f"{DEBIAN_CLASSPATH[0]} is missing: install Debian's zookeeper package "
            "(scripts/ensure-zookeeper) or set ZOOKEEPER_CLASSPATH"
        )
    return ":".join(p for p in DEBIAN_CLASSPATH if Path(p).is_file())


def java_command() -> str:
    java = os.environ.get("JAVA") or shutil.which("java")
    if java is None:
        raise ZooKeeperUnavailable("no java on PATH (Debian's zookeeper package brings one)")
    return java


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the server may still lose a race for it: start()
    retries with another one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send one of ZooKeeper's four-letter commands (`srvr`, `mntr`, `cons`) and read the
    whole answer."""
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.sendall(word.encode("ascii"))
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


@dataclass
class ZooKeeperServer:
    """A running standalone server. `connect` is its connection string for clients."""

    host: str
    port: int
    data_dir: Path
    process: subprocess.Popen[bytes]
    _scratch: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @property
    def connect(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def start(
        cls,
        data_dir: Path | None = None,
        *,
        tick_ms: int = 200,
        max_session_timeout_ms: int = 60_000,
        force_sync: bool = True,
        attempts: int = 3,
    ) -> ZooKeeperServer:
        """Start a server (in a temporary data dir unless one is given) and wait until it
        serves. `force_sync=False` skips fsync of its transaction log (tests only)."""
        scratch = None
        if data_dir is None:
            scratch = tempfile.TemporaryDirectory(prefix="zookeeper-")
            data_dir = Path(scratch.name)
        data_dir.mkdir(parents=True, exist_ok=True)
        folder = data_dir

        def launch() -> ZooKeeperServer:
            port = free_port()
            config = folder / "zoo.cfg"
            config.write_text(
                _config(folder, port, tick_ms, max_session_timeout_ms, force_sync),
                encoding="utf-8",
            )
            log = (folder / "zookeeper.log").open("ab")
            try:
                process = subprocess.Popen(
                    [java_command(), *JVM_OPTIONS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                     "-cp", classpath(), MAIN_CLASS, str(config)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, preexec_fn=die_with_parent,
                )  # fmt: skip
            finally:
                log.close()
            return cls("127.0.0.1", port, folder, process, scratch)

        def unavailable(problem: str) -> Exception:
            return ZooKeeperUnavailable(f"ZooKeeper did not start: {problem}")

        return first_serving(attempts, launch, START_TIMEOUT_S, scratch, unavailable)

    def serving(self) -> bool:
        """Whether it answers `srvr` as a standalone server."""
        return "Mode: standalone" in four_letter_word(self.host, self.port, "srvr")

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = (self.data_dir / "zookeeper.log").read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the JVM (SIGTERM, then SIGKILL) and remove a temporary data dir."""
        stop_process_group(self.process, STOP_TIMEOUT_S)
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> ZooKeeperServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _config(
    data_dir: Path, port: int, tick_ms: int, max_session_timeout_ms: int, force_sync: bool
) -> str:
    return "\n".join(
        [
            f"tickTime={tick_ms}",
            f"dataDir={data_dir}",
            f"clientPort={port}",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=false",
            "maxClientCnxns=0",
            f"minSessionTimeout={2 * tick_ms}",
            f"maxSessionTimeout={max_session_timeout_ms}",
            "4lw.commands.whitelist=srvr,mntr,cons,stat,ruok",
            "preAllocSize=4096",
            f"forceSync={'yes' if force_sync else 'no'}",
            "",
        ]
    )


@contextlib.contextmanager
def running_zookeeper(
    data_dir: Path | None = None, *, tick_ms: int = 200, force_sync: bool = True
) -> Iterator[ZooKeeperServer]:
    """`with running_zookeeper() as zk: ...zk.connect...` (options as for `start`)."""
    server = ZooKeeperServer.start(data_dir, tick_ms=tick_ms, force_sync=force_sync)
    try:
        yield server
    finally:
        server.stop()
