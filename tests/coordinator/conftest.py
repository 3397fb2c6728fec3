"""Lets the coordinator tests import their shared helpers (`serve_process`), which live beside
them: the suite imports test modules with `--import-mode=importlib`, which does not put a
test's directory on `sys.path`. A server process a failed test left running is killed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _no_server_left_running() -> Iterator[None]:
    from serve_process import kill_leftovers

    yield
    kill_leftovers()
