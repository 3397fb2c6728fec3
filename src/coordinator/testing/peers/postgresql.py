"""A real PostgreSQL server on a free loopback port, for the cluster tests and benchmarks.

    with PostgreSQLServer.start() as server:
        url = server.url("postgres")   # postgresql://postgres@127.0.0.1:PORT/postgres

`PostgreSQLServer.start()` runs `initdb` and then `postgres` from the binaries of Debian's
`postgresql` package (installed by `scripts/ensure-postgresql`) on a temporary data dir: trust
authentication for the `postgres` role on 127.0.0.1 only (and a Unix socket inside the data
dir, not /var/run), a small `shared_buffers`, and `fsync` left on, since the benchmarks measure
durable commits. PostgreSQL refuses to run as root, so when we are root both run as the
`postgres` user (`runuser -u postgres --`, the scratch folder handed to that user). It returns
once `postmaster.pid` says the server is ready to accept connections. `stop()` asks for a fast
shutdown (SIGINT to the postmaster: open transactions roll back), then SIGKILLs. A test run
killed outright leaves no server behind: the postmaster dies with the runuser process, which
dies with us (`PR_SET_PDEATHSIG` on both).

Nothing here touches the package's system service. `POSTGRESQL_BINDIR` overrides where the
binaries are.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.zookeeper.server import die_with_parent, free_port

SUPERUSER = "postgres"
"""The role initdb makes, and the OS user the server runs as when we are root."""
TEST_SETTINGS: Mapping[str, str] = {
    "shared_buffers": "32MB",
    "max_connections": "80",
    "fsync": "on",
    "synchronous_commit": "on",
    # Each test makes a database; WAL_LOG copies the template through WAL, with no checkpoint.
    "max_wal_size": "256MB",
    "log_min_messages": "warning",
    "log_line_prefix": "%m [%p] ",
}
"""Server settings suited to tests, under the caller's."""
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


class PostgreSQLUnavailable(RuntimeError):
    """No PostgreSQL server could be started here (binaries missing, or it failed)."""


def bin_dir() -> Path:
    """The folder of `postgres` and `initdb`: `POSTGRESQL_BINDIR`, else the newest Debian one."""
    override = os.environ.get("POSTGRESQL_BINDIR")
    if override:
        return Path(override)
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if not found:
        raise PostgreSQLUnavailable(
            "no /usr/lib/postgresql/*/bin/postgres: run scripts/ensure-postgresql "
            "(or set POSTGRESQL_BINDIR)"
        )
    return found[-1].parent


def as_server_user(command: Sequence[str]) -> list[str]:
    """`command` as PostgreSQL's OS user when we are root (it refuses to run as root), with
    SIGKILL when its parent (runuser) dies; as is otherwise."""
    if os.geteuid() != 0:
        return list(command)
    return ["runuser", "-u", SUPERUSER, "--", "setpriv", "--pdeathsig", "KILL", "--", *command]


@dataclass
class PostgreSQLServer:
    """A running server. `url(database)` is a libpq connection URL for it."""

    host: str
    port: int
    data_dir: Path
    process: subprocess.Popen[bytes]
    started_in_s: float = 0.0
    """From launching initdb to the server ready for connections."""
    initdb_in_s: float = 0.0
    """initdb's part of it."""
    _scratch: Path | None = field(default=None, repr=False)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{database}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "postgresql.log"

    @classmethod
    def start(cls, settings: Mapping[str, object] = {}, *, attempts: int = 3) -> PostgreSQLServer:
        """initdb a temporary data dir and start a server on it with `TEST_SETTINGS` under
        `settings`; return once it accepts connections."""
        binaries = bin_dir()
        merged = {**TEST_SETTINGS, **{k: str(v) for k, v in settings.items()}}
        began = time.monotonic()
        scratch = Path(tempfile.mkdtemp(prefix="postgresql-"))
        try:
            if os.geteuid() == 0:
                shutil.chown(scratch, SUPERUSER, SUPERUSER)
            data = scratch / "data"
            _initdb(binaries, data)
            initdb_in_s = time.monotonic() - began
            problem = "not tried"
            for _ in range(attempts):
                port = free_port()
                server = cls("127.0.0.1", port, data, _launch(binaries, data, port, merged))
                server._scratch = scratch
                problem = server._wait_until_ready()
                if not problem:
                    server.initdb_in_s = initdb_in_s
                    server.started_in_s = time.monotonic() - began
                    return server
                server._scratch = None  # a retry reuses the data dir
                server.stop()
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        shutil.rmtree(scratch, ignore_errors=True)
        raise PostgreSQLUnavailable(f"PostgreSQL did not start: {problem}")

    def _wait_until_ready(self) -> str:
        """'' once postmaster.pid says "ready" for our port, else what went wrong."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return f"exited with status {self.process.returncode}: {self.log_tail()}"
            lines = self._pid_file()
            # PostgreSQL ≥ 10: line 4 the port, line 8 the status ("ready" once it accepts).
            if len(lines) >= 8 and lines[3] == str(self.port) and lines[7].strip() == "ready":
                return ""
            time.sleep(0.02)
        return f"not ready after {START_TIMEOUT_S:.0f} s: {self.log_tail()}"

    def _pid_file(self) -> list[str]:
        with contextlib.suppress(OSError):
            return (self.data_dir / "postmaster.pid").read_text().splitlines()
        return []

    def postmaster_pid(self) -> int | None:
        lines = self._pid_file()
        return int(lines[0]) if lines and lines[0].isdigit() else None

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self) -> None:
        """Fast shutdown (SIGINT to the postmaster), SIGKILL after `STOP_TIMEOUT_S`; then
        remove the scratch folder."""
        if self.process.poll() is None:
            postmaster = self.postmaster_pid()
            # Not to runuser: it would pass on SIGTERM (a smart shutdown that waits for clients).
            if postmaster is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(postmaster, signal.SIGINT)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def kill(self) -> None:
        """SIGKILL the server and runuser (a crash), leaving the data dir."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def __enter__(self) -> PostgreSQLServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running_postgresql(settings: Mapping[str, object] = {}) -> Iterator[PostgreSQLServer]:
    """`with running_postgresql() as server: ...server.url()...` (as `PostgreSQLServer.start`)."""
    server = PostgreSQLServer.start(settings)
    try:
        yield server
    finally:
        server.stop()


def _initdb(binaries: Path, data: Path) -> None:
    # --no-sync: only initdb's own files, of a throw-away data dir; the server fsyncs as usual.
    done = subprocess.run(
        as_server_user(
            [str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
             "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"]
        ),
        stdin=subprocess.DEVNULL, capture_output=True, timeout=START_TIMEOUT_S,
        preexec_fn=die_with_parent,
    )  # fmt: skip
    if done.returncode != 0:
        output = (done.stderr + done.stdout).decode(errors="replace").strip().splitlines()
        reason = output[-1] if output else f"status {done.returncode}"
        raise PostgreSQLUnavailable(f"initdb failed: {reason}")


def _launch(
    binaries: Path, data: Path, port: int, settings: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    fixed = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": str(data),
    }
    options = [f"--{key}={value}" for key, value in {**settings, **fixed}.items()]
    with (data.parent / "postgresql.log").open("ab") as out:
        return subprocess.Popen(
            as_server_user([str(binaries / "postgres"), "-D", str(data), *options]),
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent,
        )  # fmt: skip
