"""What an installed rebalance offers other code: type information for all three packages (so
`mypy --strict` on a user's code sees real types, not `Any`) and the pytest plugin's entry point.
The wheel itself, installed without extras, is checked by `tests/plain_install_check.py`."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ("rebalance", "assignors", "coordinator")

USER_CODE = """
from assignors.aiokafka import assignor
from coordinator.errors import OperationalError
from rebalance import partition_for

reveal_type(assignor)
reveal_type(partition_for)
reveal_type(OperationalError.exit_status)
"""


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_says_it_is_typed(package: str) -> None:
    module = __import__(package)
    assert (Path(module.__file__).parent / "py.typed").is_file()


def test_mypy_strict_on_user_code_sees_our_types(tmp_path: Path) -> None:
    """Run from a directory of its own, without this project's mypy settings: as a user would."""
    (tmp_path / "user.py").write_text(USER_CODE)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
         "--no-incremental", "user.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    revealed = [line.split("Revealed type is ", 1)[1] for line in done.stdout.splitlines()
                if "Revealed type is" in line]  # fmt: skip
    assert revealed == [
        '"def (name: str, *, client_rack: str | None =) -> assignors.aiokafka.AiokafkaAssignor"',
        '"def (group_id: str, partitions: int =) -> int"',
        '"int"',
    ]


def test_the_pytest_plugin_is_an_entry_point() -> None:
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert sorted((e.name, e.value) for e in plugins if e.value.startswith("coordinator.")) == [
        ("coordinator.peers.pytest_plugin", "coordinator.peers.pytest_plugin"),
        ("coordinator.pytest_plugin", "coordinator.pytest_plugin"),
    ]
