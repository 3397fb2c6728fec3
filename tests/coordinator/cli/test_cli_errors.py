"""What `rebalance` says when it cannot do its job: one line (cause, path or address, what to do),
status 2 for a wrong command line and 1 for the machine's state, no traceback unless `--debug`,
and a start that fails leaves nothing behind."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_process import REBALANCE, one_line, run_rebalance

from coordinator.cli import main as cli
from coordinator.groups.extension import STORE_FILE


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        yield taken.getsockname()[1]


def serve(data_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_rebalance("serve", "--data-dir", str(data_dir), "--bind", "127.0.0.1:0", *extra)


def test_a_port_in_use_is_one_line_and_creates_no_data_dir(tmp_path: Path, busy_port: int) -> None:
    data = tmp_path / "new"
    done = serve(data, "--bind", f"127.0.0.1:{busy_port}", "--topic", "orders:3")
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        f"rebalance serve: cannot listen on 127.0.0.1:{busy_port}: the address is already in use "
        f"(another server?); stop it, or choose another port"
    )
    assert not data.exists()


def test_a_port_in_use_leaves_an_existing_data_dir_as_it_was(
    tmp_path: Path, busy_port: int
) -> None:
    done = serve(tmp_path, "--bind", f"127.0.0.1:{busy_port}", "--topic", "orders:3")
    assert done.returncode == 1
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]  # no topic, no store, no log


def test_debug_adds_the_traceback(tmp_path: Path, busy_port: int) -> None:
    done = serve(tmp_path / "d", "--bind", f"127.0.0.1:{busy_port}", "--debug")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("rebalance serve: cannot listen on")


def _file(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("not a directory")
    return tmp_path / "file"


def _corrupt_store(tmp_path: Path) -> Path:
    (tmp_path / STORE_FILE).write_bytes(b"this is not an SQLite database" * 100)
    return tmp_path


def _event_log_is_a_file(tmp_path: Path) -> Path:
    (tmp_path / "events").write_text("")
    return tmp_path / "data"


def _topic_metadata(tmp_path: Path) -> Path:
    (tmp_path / "topics" / "orders").mkdir(parents=True)
    (tmp_path / "topics" / "orders" / "topic.json").write_text("{broken")
    return tmp_path


CASES: list[tuple[str, Callable[[Path], Path], list[str], int, str]] = [
    ("data dir is a file", _file, [], 1, "data dir {d} is not a directory; choose another"),
    (
        "parent missing",
        lambda t: t / "unmounted" / "data",
        [],
        1,
        "data dir {d}: its parent {t}/unmounted does not exist (a volume not mounted?)",
    ),
    (
        "illegal topic name",
        lambda t: t / "new",
        ["--topic", "a/b:3"],
        2,
        "error: argument --topic: illegal topic name 'a/b' in 'a/b:3'",
    ),
    ("unknown setting", lambda t: t / "new", ["--set", "x.y=1"], 2, "unknown setting 'x.y'"),
    (
        "bad setting value",
        lambda t: t / "new",
        ["--set", "num.partitions=lots"],
        2,
        "bad value for num.partitions",
    ),
    ("unknown option", lambda t: t / "new", ["--bogus"], 2, "unrecognized arguments: --bogus"),
    (
        "bad --bind",
        lambda t: t / "new",
        ["--bind", "9092"],
        2,
        "error: argument --bind: expected HOST:PORT, got '9092'",
    ),
    (
        "--bind port out of range",
        lambda t: t / "new",
        ["--bind", "127.0.0.1:99999"],
        2,
        "error: argument --bind: port 99999 is out of range (0-65535; 0 picks a free port) in "
        "'127.0.0.1:99999'",
    ),
    (
        "--topic with no partitions",
        lambda t: t / "new",
        ["--topic", "orders:0"],
        2,
        "error: argument --topic: partitions must be at least 1, got 'orders:0'",
    ),
    (
        "--bind with listeners",
        lambda t: t / "new",
        ["--bind", "127.0.0.1:0", "--set", "listeners=PLAINTEXT://127.0.0.1:0"],
        2,
        "--bind and the listeners setting both say where to listen; give one of them",
    ),
    (
        "corrupt groups.sqlite",
        _corrupt_store,
        [],
        1,
        f"{{d}}/{STORE_FILE}: not a readable record store (file is not a database); restore "
        "it from a backup, or move it away to start with no groups",
    ),
    (
        "event log dir is a file",
        _event_log_is_a_file,
        ["--event-log", "{t}/events"],
        1,
        "event log dir {t}/events is not a directory; choose another --event-log",
    ),
    (
        "unreadable topic metadata",
        _topic_metadata,
        [],
        1,
        "{d}/topics/orders/topic.json: unreadable topic metadata",
    ),
]


@pytest.mark.parametrize(("setup", "extra", "status", "says"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_failed_start_says_one_line(
    tmp_path: Path, setup: Callable[[Path], Path], extra: list[str], status: int, says: str
) -> None:
    data_dir = setup(tmp_path)
    existed = data_dir.exists()
    arguments = [a.format(t=tmp_path, d=data_dir) for a in extra]
    done = serve(data_dir, *arguments)
    assert done.returncode == status, done.stderr
    line = one_line(done.stderr)
    assert line.startswith("rebalance serve: ")
    assert says.format(t=tmp_path, d=data_dir) in line
    assert data_dir.exists() == existed  # a failed start creates nothing


def test_a_read_only_data_dir(tmp_path: Path) -> None:
    """In a mount namespace of its own (a read-only tmpfs), as root cannot be denied otherwise."""
    unshare = shutil.which("unshare")
    probe = subprocess.run(
        [unshare or "unshare", "--user", "--map-root-user", "--mount", "true"],
        capture_output=True,
    )
    if unshare is None or probe.returncode != 0:
        pytest.skip("no unshare(1) with user and mount namespaces here")
    script = f'mount -t tmpfs -o ro tmpfs "{tmp_path}" && exec "$@"'  # the mount ends with it
    done = subprocess.run(
        [unshare, "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
         *REBALANCE, "serve", "--data-dir", str(tmp_path), "--bind", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        f"rebalance serve: data dir {tmp_path} is not writable (read-only file system); fix "
        f"its permissions, or choose another --data-dir"
    )


def test_report_without_the_analytics_extra_says_which_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_find_spec = importlib.util.find_spec

    def without_pyspark(name: str, *args: Any) -> Any:
        return None if name == "pyspark" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_pyspark)
    for command in (["report", "x", "--out", "y"], ["sweep", "--help"], ["demo"]):
        assert cli.main(command) == 1
        line = one_line(capsys.readouterr().err)
        assert line.startswith(f"rebalance {command[0]}: needs the 'analytics' extra (pyspark, ")
        assert line.endswith("pip install 'rebalance-kafka[analytics]'")


def test_the_consumer_demo_without_its_extra_says_which_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_find_spec = importlib.util.find_spec

    def without_librdkafka(name: str, *args: Any) -> Any:
        return None if name == "confluent_kafka" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_librdkafka)
    assert cli.main(["demo", "--protocol", "consumer"]) == 1
    assert one_line(capsys.readouterr().err) == (
        "rebalance demo: needs the 'consumer' extra (confluent_kafka): "
        "pip install 'rebalance-kafka[consumer]'"
    )


def test_an_unexpected_failure_is_one_line_that_points_at_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from coordinator.cli import repair

    def broken(*args: Any, **kwargs: Any) -> int:
        raise ValueError("bug\nwith two lines")

    monkeypatch.setattr(repair, "repair", broken)
    assert cli.main(["repair", "--data-dir", str(tmp_path)]) == 1
    assert one_line(capsys.readouterr().err) == (
        "rebalance repair: unexpected error: ValueError: bug with two lines "
        "(run with --debug for the traceback)"
    )
    assert cli.main(["repair", "--data-dir", str(tmp_path), "-v"]) == 1
    assert "Traceback" in capsys.readouterr().err
