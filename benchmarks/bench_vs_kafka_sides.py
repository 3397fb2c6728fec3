"""The two servers `bench_vs_kafka.py` compares, behind one face (`Side`): our `rebalance serve`
and Apache Kafka's broker (`coordinator.testing.peers.kafka_broker`), each a process (tree) of
its own on loopback, given the same group settings (Kafka's names).

A side gives its port, the CPU seconds and resident memory of its processes (read from /proc:
for ours the node, its event log writer and its assignor worker; for Kafka the JVM), how long it
took from launch to the first ApiVersions answered and to serving groups, and (Kafka) the live
heap after a full collection (`jcmd GC.class_histogram`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bench_kafka_peer import KAFKA_SCRIPT_OPTIONS
from coordinator.testing.peers.kafka_broker import (
    TEST_SETTINGS,
    KafkaBroker,
    api_versions_answered,
    coordinator_found,
    setting_text,
)
from coordinator.zookeeper.server import die_with_parent, free_port

#: Group settings both sides get (over Kafka's `TEST_SETTINGS`, whose group settings ours gets
#: too): a classic group forms 300 ms after its last new member (so a thousand joins sent at
#: once land in one generation); KIP-848 members heartbeat every 500 ms; assignment batched
#: once a second and computed off the request path, as Kafka 4.4 ships; groups of any size.
BENCH_SETTINGS: Mapping[str, object] = {
    "group.initial.rebalance.delay.ms": 300,
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.assignment.interval.ms": 1000,
    "group.consumer.assignor.offload.enable": True,
    "group.consumer.max.size": 100000,
    "group.max.size": 100000,
}
START_TIMEOUT_S = 90.0


def group_settings(settings: Mapping[str, object]) -> dict[str, str]:
    """The group coordinator's settings of `TEST_SETTINGS` under `settings` (what ours gets)."""
    merged = {**TEST_SETTINGS, **settings}
    return {k: setting_text(v) for k, v in merged.items() if k.startswith("group.")}


class Side:
    """One server under test."""

    name: str
    port: int
    api_versions_s: float
    """From launch to the first ApiVersions answered."""
    serving_s: float
    """From launch to FindCoordinator and DescribeGroups answered (groups served)."""

    def pids(self) -> list[int]:
        raise NotImplementedError

    def process_cpu(self) -> float:
        """CPU seconds all its processes have used (user + system, /proc)."""
        return sum(_cpu_seconds(pid) for pid in self.pids())

    def rss(self) -> int:
        """Resident bytes of all its processes."""
        return sum(_rss_bytes(pid) for pid in self.pids())

    def live_heap(self) -> int | None:
        """Bytes of live objects after a full collection, where the runtime says (the JVM)."""
        return None

    def stop(self) -> None:
        raise NotImplementedError


class OursSide(Side):
    """`rebalance serve` as users run it (`python -m coordinator.cli.main serve`)."""

    name = "ours"

    def __init__(self, settings: Mapping[str, object] = BENCH_SETTINGS) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="bench-ours-")
        self.port = free_port()
        sets = [arg for k, v in group_settings(settings).items() for arg in ("--set", f"{k}={v}")]
        command = [
            sys.executable, "-m", "coordinator.cli.main", "serve",
            "--bind", f"127.0.0.1:{self.port}", "--data-dir", f"{self._scratch.name}/data",
            "--log-level", "WARNING", *sets,
        ]  # fmt: skip
        began = time.monotonic()
        with open(f"{self._scratch.name}/stderr.log", "wb") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=die_with_parent,
            )  # fmt: skip
        self.api_versions_s = _wait(self, api_versions_answered) - began
        self.serving_s = _wait(self, coordinator_found) - began

    def pids(self) -> list[int]:
        return _tree(self.process.pid)

    def log_tail(self) -> str:
        text = Path(f"{self._scratch.name}/stderr.log").read_text(errors="replace")
        return " | ".join(text.strip().splitlines()[-5:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._scratch.cleanup()


class KafkaSide(Side):
    """Kafka's broker, started by the tests' launcher (or one it already runs: `broker`)."""

    name = "kafka"

    def __init__(
        self,
        settings: Mapping[str, object] = BENCH_SETTINGS,
        jvm_options: Sequence[str] = KAFKA_SCRIPT_OPTIONS,
        broker: KafkaBroker | None = None,
    ) -> None:
        self._owned = broker is None
        self.broker = broker or KafkaBroker.start(settings, jvm_options=jvm_options)
        self.port = self.broker.port
        self.api_versions_s = self.broker.api_versions_in_s
        self.serving_s = self.broker.started_in_s
        self.formatted_s = self.broker.formatted_in_s

    def pids(self) -> list[int]:
        return [self.broker.process.pid]

    def live_heap(self) -> int | None:
        """`jcmd PID GC.class_histogram` (a full collection first): its total bytes."""
        jcmd = shutil.which("jcmd")
        if jcmd is None:
            return None
        done = subprocess.run(
            [jcmd, str(self.broker.process.pid), "GC.class_histogram"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        found = re.search(r"^Total\s+\d+\s+(\d+)", done.stdout, re.MULTILINE)
        return int(found.group(1)) if found else None

    def stop(self) -> None:
        if self._owned:
            self.broker.stop()


def _wait(side: OursSide, answered: Callable[[str, int], bool]) -> float:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if side.process.poll() is not None:
            raise RuntimeError(f"our server exited at start: {side.log_tail()}")
        with contextlib.suppress(OSError):
            if answered("127.0.0.1", side.port):
                return time.monotonic()
        time.sleep(0.005)
    raise RuntimeError(f"our server did not answer in {START_TIMEOUT_S:.0f} s: {side.log_tail()}")


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants, from /proc's children lists."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending.extend(int(child) for child in children.read().split())
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0
