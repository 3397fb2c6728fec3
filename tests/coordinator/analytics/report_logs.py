"""A log with two group types for the report tests: the real demo run's classic group
(`demo_log/`) and a ZooKeeper-coordinated group of three consumers over the same minute (one
joins late, one crashes and its session expires)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

DEMO_LOG = Path(__file__).parent / "demo_log"


def _zk(ts: int, kind: str, member: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "ts": ts, "node": -1, "type": kind, "group": "zk-billing", "generation": None,
            "member": member, "group_type": "zookeeper", **fields}  # fmt: skip


def _claimed(ts: int, member: str, partitions: list[int], consumers: list[str]) -> dict[str, Any]:
    return _zk(ts, "zk_rebalance_completed", member, attempt=1, zk_ops=24, strategy="range",
               assignments={member: [["orders", partitions]]}, consumers=consumers,
               partitions_total=6)  # fmt: skip


def zookeeper_group(t0: int) -> list[dict[str, Any]]:
    """x starts alone, y joins and they split six partitions, z joins (everyone rebalances),
    z crashes (its session expires, the others take its partitions back: z's end at 9000)."""
    joined = {"client_id": "zk-billing", "instance_id": None, "protocols": ["range"]}
    started = {"trigger": "consumers_changed", "watch_events": 1}
    return [
        _zk(t0, "member_joined", "x", **joined),
        _zk(t0 + 5, "rebalance_started", "x", trigger="started", members=0, watch_events=0),
        _claimed(t0 + 20, "x", [0, 1, 2, 3, 4, 5], ["x"]),
        _zk(t0 + 40, "member_joined", "y", **joined),
        _zk(t0 + 45, "rebalance_started", "y", trigger="started", members=1, watch_events=0),
        _zk(t0 + 50, "rebalance_started", "x", members=1, **started),
        _claimed(t0 + 90, "x", [0, 1, 2], ["x", "y"]),
        _claimed(t0 + 140, "y", [3, 4, 5], ["x", "y"]),
        _zk(t0 + 3000, "member_joined", "z", **joined),
        *(_zk(t0 + 3010 + i, "rebalance_started", m, members=2, **started)
          for i, m in enumerate(["x", "y", "z"])),
        _claimed(t0 + 3060, "x", [0, 1], ["x", "y", "z"]),
        _claimed(t0 + 3080, "y", [2, 3], ["x", "y", "z"]),
        _claimed(t0 + 3400, "z", [4, 5], ["x", "y", "z"]),
        *(_zk(t0 + 9000 + i, "rebalance_started", m, members=3, **started)
          for i, m in enumerate(["x", "y"])),
        _claimed(t0 + 9150, "x", [0, 1, 2], ["x", "y"]),
        _claimed(t0 + 9190, "y", [3, 4, 5], ["x", "y"]),
    ]  # fmt: skip


def two_protocol_log(directory: Path) -> Path:
    """The demo's log and the ZooKeeper group's, as two files of one log directory."""
    directory.mkdir(parents=True, exist_ok=True)
    demo = DEMO_LOG / "events-000001.jsonl"
    shutil.copy(demo, directory / demo.name)
    first = min(json.loads(line)["ts"] for line in demo.read_text().splitlines())
    events = zookeeper_group(first + 1500)
    (directory / "zookeeper-zk-billing.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events)
    )
    return directory
