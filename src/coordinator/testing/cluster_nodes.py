"""`rebalance serve --cluster` node processes on one PostgreSQL, as users run them.

    nodes = ClusterNodes(url, root, topics=["orders:4"], settings={"cluster.lease.ms": 2000})
    await nodes.start(1); await nodes.start(2); await nodes.start(3)
    await nodes.balanced()                   # every live node holds its fair share
    owner, epoch = nodes.owner("billing")    # from PostgreSQL's lease table, now

Each node is `python -m coordinator.cli.main serve --cluster URL --node-id N` on an ephemeral
loopback port, with its own data dir `root/data-N` and its stderr in `root/node-N.log`; `start`
returns once the node says it listens. What the cluster looks like is read from PostgreSQL
through `coordinator.cluster.status.read_status`, the reading `rebalance cluster status` prints.
A node dies with the process that started it (`PR_SET_PDEATHSIG`), frozen or not, so a demo or
test killed outright leaves none behind; `stop_all` SIGKILLs the ones still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from coordinator.cluster.status import ClusterStatus, read_status
from coordinator.errors import OperationalError
from coordinator.zookeeper.server import die_with_parent
from rebalance.placement import partition_for

START_TIMEOUT_S = 60.0
"""How long a node may take to listen: generous, for a loaded 2-core machine."""
PARTITIONS = 50
"""`offsets.topic.num.partitions`, the nodes' default."""


class NodeFailedToStart(OperationalError):
    """A node exited, or did not listen in time; the message ends with its log's last line."""


@dataclass
class ClusterNode:
    node_id: int
    process: asyncio.subprocess.Process
    port: int
    log: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process.returncode is None


class ClusterNodes:
    """The node processes of one cluster (one PostgreSQL database at `url`)."""

    def __init__(
        self,
        url: str,
        root: Path,
        *,
        topics: Iterable[str] = (),
        settings: Mapping[str, object] = {},
    ) -> None:
        self.url, self.root = url, root
        self.topics = list(topics)
        self.settings = {name: str(value) for name, value in settings.items()}
        self.nodes: dict[int, ClusterNode] = {}

    async def start(self, node_id: int, *extra: str) -> ClusterNode:
        """Start node `node_id`; returns once it listens (`NodeFailedToStart` otherwise)."""
        self.root.mkdir(parents=True, exist_ok=True)
        log = self.root / f"node-{node_id}.log"
        options = [arg for topic in self.topics for arg in ("--topic", topic)]
        options += [arg for item in self.settings.items() for arg in ("--set", "=".join(item))]
        with log.open("ab") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "coordinator.cli.main", "serve", "--cluster", self.url,
                "--node-id", str(node_id), "--bind", "127.0.0.1:0",
                "--data-dir", str(self.root / f"data-{node_id}"), *options, *extra,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=out,
                preexec_fn=die_with_parent,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (found := re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text())):
            if process.returncode is not None or time.monotonic() > deadline:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
                last = log.read_text(errors="replace").strip().splitlines() or ["(no output)"]
                raise NodeFailedToStart(f"node {node_id} did not start: {last[-1]}")
            await asyncio.sleep(0.05)
        node = ClusterNode(node_id, process, int(found.group(1)), log)
        self.nodes[node_id] = node
        return node

    def status(self, changes: int = 0) -> ClusterStatus:
        """The cluster as PostgreSQL has it now, with the last `changes` ownership changes."""
        return read_status(self.url, changes)

    def owner(self, group: str) -> tuple[int | None, int]:
        """The node whose live lease holds `group`'s partition (None: none now), and its epoch."""
        row = self.status().leases[partition_for(group, PARTITIONS)]
        return (row.owner if row.live else None), row.epoch

    def running(self) -> list[ClusterNode]:
        return [node for node in self.nodes.values() if node.running]

    def bootstrap(self) -> list[str]:
        return [node.address for node in self.running()]

    def is_balanced(self, node_ids: Iterable[int]) -> bool:
        """Every partition held by a live lease of one of `node_ids`, each holding its share."""
        status = self.status()
        wanted = sorted(node_ids)
        held = [row.owner for row in status.leases if row.live]
        share = math.ceil(len(status.leases) / len(wanted))
        return (
            len(held) == len(status.leases)
            and set(held) <= set(wanted)
            and all(share - 1 <= held.count(n) <= share for n in wanted)
        )

    async def balanced(self, node_ids: Iterable[int] | None = None, timeout: float = 60) -> float:
        """Wait until `node_ids` (default: the running nodes) share the partitions; seconds it
        took. `TimeoutError` after `timeout`."""
        wanted = [n.node_id for n in self.running()] if node_ids is None else list(node_ids)
        began = time.monotonic()
        while not await asyncio.to_thread(self.is_balanced, wanted):
            if time.monotonic() - began > timeout:
                raise TimeoutError(f"nodes {wanted} did not share the partitions in {timeout} s")
            await asyncio.sleep(0.1)
        return time.monotonic() - began

    async def stop_all(self) -> None:
        """SIGKILL every node still running (resumed first if frozen: a stopped process dies of
        SIGKILL too, but says nothing more)."""
        for node in self.nodes.values():
            if node.running:
                with contextlib.suppress(ProcessLookupError):
                    node.process.send_signal(signal.SIGCONT)
                    node.process.kill()
                await node.process.wait()
