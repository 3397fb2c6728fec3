"""What a serving node carries: the large-group numpy paths of the assignors are imported when a
large group is assigned, not when a node starts (numpy alone is 22 MB of resident memory), and
kio's phantom types do not bring Hypothesis with them (9 MB), although it is installed here; the
assignor worker's process machinery (with pickle and resource) is imported when a large KIP-848
group first offloads its target, and the client-balance client when it is used, not at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LAZY = {
    "coordinator.groups.assignor_worker",
    "pickle",
    "resource",
    "coordinator.clients.client_balance.consumer",
    "coordinator.zookeeper.fetcher",
}

NODE = f"""
import asyncio, sys
LAZY = {sorted(LAZY)!r}
from coordinator.testing.server import running_server

async def main() -> None:
    async with running_server(topics=[("t", 3)]):
        print("numpy" in sys.modules, "hypothesis" in sys.modules)
        print(sorted(set(sys.modules).intersection(LAZY)))

asyncio.run(main())
"""


def test_a_started_node_has_imported_neither_numpy_nor_hypothesis_nor_the_worker() -> None:
    result = subprocess.run(
        [sys.executable, "-c", NODE], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.splitlines() == ["False False", "[]"]


def test_hypothesis_is_still_there_for_whoever_imports_it() -> None:
    script = (
        "import coordinator.node.app, hypothesis.strategies as st; print(st.integers().example())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().lstrip("-").isdigit()


def test_the_event_log_writer_loads_neither_typing_nor_pathlib() -> None:
    """The writer is a process of its own beside every node: 1.5 MB of its ~11 are these two."""
    from coordinator.groups.event_log import writer as event_log_writer

    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import writer; "
        "print(sorted({'typing', 'pathlib'}.intersection(sys.modules)))"
    )
    folder = str(Path(event_log_writer.__file__).parent)
    result = subprocess.run(
        [sys.executable, "-I", "-c", script, folder],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "[]"
