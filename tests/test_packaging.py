"""What an installed rebalance offers other code: type information for all three packages (so
`mypy --strict` on a user's code sees real types, not `Any`) and the pytest plugin's entry point.
The wheel itself, installed without extras, is checked by `tests/plain_install_check.py`."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.cli.main import main
from coordinator.errors import MissingExtraError
from rebalance import DISTRIBUTION, __version__

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


def test_the_distribution_is_rebalance_kafka_at_the_packages_version() -> None:
    """PyPI's `rebalance` is another project: ours installs as `rebalance-kafka`."""
    metadata = importlib.metadata.metadata(DISTRIBUTION)
    assert (DISTRIBUTION, metadata["Name"], metadata["Version"]) == (
        "rebalance-kafka",
        "rebalance-kafka",
        __version__,
    )
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_rebalance_version_prints_the_distribution_and_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"rebalance (rebalance-kafka) {__version__}\n"


def test_a_missing_extra_names_the_distribution() -> None:
    assert str(MissingExtraError("analytics", "pyspark")) == (
        "needs the 'analytics' extra (pyspark): pip install 'rebalance-kafka[analytics]'"
    )


def test_the_pytest_plugin_is_an_entry_point() -> None:
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert sorted((e.name, e.value) for e in plugins if e.value.startswith("coordinator.")) == [
        ("coordinator.testing.peers.pytest_plugin", "coordinator.testing.peers.pytest_plugin"),
        ("coordinator.testing.pytest_plugin", "coordinator.testing.pytest_plugin"),
    ]
