"""`rebalance demo --protocol zookeeper`, run as a user runs it: the story's stages settle, the
frozen consumer costs failed claim rounds, the report explains the ZooKeeper episodes, and
nothing the demo started (consumers, ZooKeeper's JVM, Spark's) outlives it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_zookeeper_demo_tells_its_story_and_leaves_nothing_running(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.cli", "demo", "--protocol", "zookeeper",
         "--output", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    for stage in ("three members:", "dave joins:", "bob leaves cleanly", "carol's session expired:",
                  "dave's session expired, erin is in:", "dave is back:"):  # fmt: skip
        assert stage in out
    rounds = re.search(
        r"dave's session expired, erin is in: .* failed claim rounds so far: (\d+)", out
    )
    assert rounds is not None and int(rounds.group(1)) >= 1  # dave's znodes outlived him
    assert "records consumed, all members together: 1200" in out
    assert "Group           Topic                          Pid Offset" in out
    assert "(0 malformed lines)" in out
    assert re.search(r"ZooKeeper episode \d+: \d+ consumer runs, [1-9]\d* failed claim rounds", out)
    assert out.rstrip().endswith("nothing left running")
    report = tmp_path / "demo" / "report"
    assert "ZooKeeper-coordinated groups" in (report / "index.html").read_text()
    assert (report / "zookeeper_runs.png").stat().st_size > 0
