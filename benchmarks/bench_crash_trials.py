"""kill -9 durability, many trials per kind: `rebalance serve` SIGKILLed at a random moment
under KIP-848 members, client-balance nodes or topic admin clients, restarted on the same data
dir, and checked (tests/coordinator/crash_trials.py: everything acknowledged is there, nothing
never sent). Reports per kind: trials, trials that lost something (goal 0), acknowledged things
checked, median seconds per trial, and the machine's load.

Run: .venv/bin/python benchmarks/bench_crash_trials.py [--trials 100] [--kinds kip848,...]
Figures go to benchmarks/RESULTS.md under "## kill -9 trials".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "coordinator"))
# The trials the test suite runs once per kind (tests are not type-checked: no stubs here).
from crash_trials import KINDS, trial  # type: ignore[import-not-found]


async def run_kind(name: str, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    seconds: list[float] = []
    checked: list[int] = []
    losses: list[str] = []
    loads = [os.getloadavg()[0]]
    for number in range(trials):
        with tempfile.TemporaryDirectory(prefix=f"crash-{name}-") as data_dir:
            started = time.monotonic()
            try:
                checked.append(await trial(KINDS[name], Path(data_dir), rng))
            except AssertionError as exc:  # a loss, or a server that did not start again
                losses.append(f"trial {number}: {exc}")
            seconds.append(time.monotonic() - started)
        loads.append(os.getloadavg()[0])
    print(
        f"{name}: {trials} trials, {len(losses)} lost something; "
        f"{sum(checked)} acknowledged things checked (median {statistics.median(checked or [0])} "
        f"a trial); median {statistics.median(seconds):.1f} s a trial; load "
        f"{min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})",
        flush=True,
    )
    for loss in losses:
        print(f"  {loss}", flush=True)


async def main(args: argparse.Namespace) -> None:
    for name in args.kinds.split(","):
        await run_kind(name, args.trials, args.seed)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--seed", type=int, default=35)
    asyncio.run(main(parser.parse_args()))
