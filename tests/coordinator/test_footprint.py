"""What a serving node carries: the large-group numpy paths of the assignors are imported when a
large group is assigned, not when a node starts (numpy alone is 22 MB of resident memory)."""

from __future__ import annotations

import subprocess
import sys

NODE = """
import asyncio, sys
from coordinator.testing import running_server

async def main() -> None:
    async with running_server(topics=[("t", 3)]):
        print("numpy" in sys.modules)

asyncio.run(main())
"""


def test_a_started_node_has_not_imported_numpy() -> None:
    result = subprocess.run(
        [sys.executable, "-c", NODE], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "False"
