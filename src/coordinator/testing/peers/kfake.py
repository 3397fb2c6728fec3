"""franz-go's kfake (a fake Kafka cluster in Go) on loopback: another broker to run
`rebalance conformance` against, beside Apache Kafka.

    with KfakeBroker.start() as kfake:
        broker = await BrokerUnderTest.connect(kfake.bootstrap, KFAKE_ASSUMED)

`KfakeBroker.start()` runs `.peers/kfake/kfake-server PORT KEY=VALUE...` (one broker, built by
`scripts/ensure-kfake`) on a free loopback port with `TEST_SETTINGS` under the caller's settings
(kfake's broker configs, Kafka's names), and returns once it answers ApiVersions and its group
coordinator answers FindCoordinator and DescribeGroups. Its state is in memory; its output goes
to `stdout.log` in a temporary folder removed when it stops.

`KFAKE_SERVER` overrides which binary runs.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.testing.peers.kafka_broker import (
    CHECKOUT,
    api_versions_answered,
    coordinator_found,
    setting_text,
)
from coordinator.zookeeper.processes import first_serving, stop_process_group
from coordinator.zookeeper.server import die_with_parent, free_port

DEFAULT_SERVER = CHECKOUT / ".peers" / "kfake" / "kfake-server"
TEST_SETTINGS: Mapping[str, object] = {
    # Classic sessions of a quarter second (kfake's minimum is 6 s), so expiry is quick.
    "group.min.session.timeout.ms": 250,
}
"""Settings suited to tests, under the caller's. KIP-848's interval and session stay kfake's
(5 s, 45 s): it has no `group.consumer.min.*` bounds to report, and the conformance model
checks a shorter interval against Kafka's 5 s minimum."""
KFAKE_ASSUMED: Mapping[str, str] = {"group.initial.rebalance.delay.ms": "0"}
"""What `rebalance conformance` is told (`--assume`): kfake's DescribeConfigs does not name the
initial delay, and it has none (a group's first join is answered at once)."""
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class KfakeUnavailable(RuntimeError):
    """No kfake broker could be started here (the binary missing, or it failed)."""


def server_command() -> Path:
    override = os.environ.get("KFAKE_SERVER")
    binary = Path(override) if override else DEFAULT_SERVER
    if not os.access(binary, os.X_OK):
        raise KfakeUnavailable(
            f"no kfake server at {binary}: run scripts/ensure-kfake (or set KFAKE_SERVER)"
        )
    return binary


@dataclass
class KfakeBroker:
    """A running kfake broker. `bootstrap` is HOST:PORT for clients."""

    host: str
    port: int
    settings: dict[str, str]
    process: subprocess.Popen[bytes]
    folder: Path
    started_in_s: float = 0.0
    """From launching to the first FindCoordinator and DescribeGroups answered."""
    _scratch: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @classmethod
    def start(cls, settings: Mapping[str, object] = {}, *, attempts: int = 3) -> KfakeBroker:
        """Start a broker with `TEST_SETTINGS` under `settings` and wait until it serves
        groups."""
        merged = {k: setting_text(v) for k, v in {**TEST_SETTINGS, **settings}.items()}
        binary = server_command()
        scratch = tempfile.TemporaryDirectory(prefix="kfake-")
        folder = Path(scratch.name)
        began = 0.0

        def launch() -> KfakeBroker:
            nonlocal began
            began = time.monotonic()
            port = free_port()
            arguments = [str(binary), str(port), *(f"{k}={v}" for k, v in merged.items())]
            with (folder / "stdout.log").open("ab") as out:
                process = subprocess.Popen(
                    arguments, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True, preexec_fn=die_with_parent,
                )  # fmt: skip
            return cls("127.0.0.1", port, merged, process, folder)

        def unavailable(problem: str) -> Exception:
            return KfakeUnavailable(f"kfake did not start: {problem}")

        broker = first_serving(attempts, launch, START_TIMEOUT_S, scratch, unavailable)
        broker.started_in_s = time.monotonic() - began
        broker._scratch = scratch
        return broker

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def serving(self) -> bool:
        return api_versions_answered(self.host, self.port) and coordinator_found(
            self.host, self.port
        )

    def log_tail(self, lines: int = 5) -> str:
        text = ""
        with contextlib.suppress(OSError):
            text = (self.folder / "stdout.log").read_text(errors="replace")
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL) and remove its folder."""
        stop_process_group(self.process, STOP_TIMEOUT_S)
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> KfakeBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
