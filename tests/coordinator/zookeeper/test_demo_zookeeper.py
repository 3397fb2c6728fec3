"""`rebalance demo --protocol zookeeper`, run as a user runs it: the story's stages settle, the
frozen consumer costs failed claim rounds, every event it logs is one the report reads, and
nothing the demo started (consumers, ZooKeeper's JVM) outlives it.

The story runs without the Spark report (`--no-report`): tests/coordinator/demo/test_demo.py covers
a demo's report, and tests/coordinator/analytics/test_zookeeper_groups.py the report's ZooKeeper
section."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance.event_schema import check_event

pytestmark = pytest.mark.slow


def test_the_zookeeper_demo_tells_its_story_and_leaves_nothing_running(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.cli.main", "demo", "--protocol", "zookeeper",
         "--output", str(tmp_path / "demo"), "--no-report"],
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
    assert out.rstrip().endswith("nothing left running")
    assert not (tmp_path / "demo" / "report").exists()
    logs = sorted((tmp_path / "demo" / "data" / "events").glob("*.jsonl"))  # one per consumer
    written = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    assert [(e, check_event(e)) for e in written if check_event(e) is not None] == []
    assert {e.get("group_type") for e in written} == {"zookeeper"}
    joined = {e["member"] for e in written if e["type"] == "member_joined"}
    assert joined == {f"demo-billing_{name}" for name in ("alice", "bob", "carol", "dave", "erin")}
    expired = [e["member"] for e in written if e["type"] == "zk_session_expired"]
    assert expired == ["demo-billing_dave"]  # he registers again after his pause
    assert any(e["type"] == "zk_claims_failed" for e in written)
