"""Lets the client-balance tests share their helpers (`test_client_balance_processes`,
`test_client_balance_wire`), which live beside them: the suite imports test modules with
`--import-mode=importlib`, which does not put a test's directory on `sys.path`."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
