"""Puts this directory on `sys.path` (the suite imports in importlib mode) so that tests can
share `consumer_harness`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
