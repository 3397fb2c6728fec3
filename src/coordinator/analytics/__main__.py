"""`python -m coordinator.analytics report ...` until the `rebalance` script wires the commands."""

import sys

from coordinator.analytics.cli import main

sys.exit(main())
