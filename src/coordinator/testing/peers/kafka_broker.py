"""Apache Kafka's broker on loopback, for tests (the oracle) and benchmarks (the peer).

    with running_kafka(settings={"group.consumer.session.timeout.ms": 2000}) as kafka:
        consumer = KafkaConsumer("t", bootstrap_servers=kafka.bootstrap)

`KafkaBroker.start()` runs one single-node combined-mode KRaft broker (`kafka.Kafka`, process
roles broker and controller) from the jars `scripts/ensure-kafka` resolved, in a JVM of its own:
it writes a `server.properties` (a PLAINTEXT listener and a controller listener on free loopback
ports, a temporary log dir, `TEST_SETTINGS` under the caller's `settings`), formats the log dir as
`kafka-storage format` does (`kafka.tools.StorageTool`, same jars), starts the broker and returns
once it answers ApiVersions and its group coordinator is loaded (FindCoordinator and
DescribeGroups answer without error: the offsets topic exists and its partition is loaded).
Its log goes to `server.log` in the log dir.

`KAFKA_LIBS` overrides where the jars are; `JAVA` which java runs them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.wire.api_keys import ApiKey
from coordinator.zookeeper.processes import (
    GiveUp,
    first_serving,
    kill_process_group,
    stop_process_group,
)
from coordinator.zookeeper.server import die_with_parent, free_port

KAFKA_VERSION = "4.4.0"
"""The version `scripts/ensure-kafka` pins (the newest 4.x Maven Central serves here)."""
CHECKOUT = Path(__file__).resolve().parents[4]
DEFAULT_LIBS = CHECKOUT / ".peers" / f"kafka-{KAFKA_VERSION}" / "libs"
JVM_OPTIONS: Sequence[str] = (
    "-Xmx384m",
    "-Xms64m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)
"""A small heap and the quick-starting JIT tier, for tests; benchmarks pass their own."""
TEST_SETTINGS: Mapping[str, object] = {
    # A group forms at once instead of after Kafka's 3 s wait.
    "group.initial.rebalance.delay.ms": 0,
    # Classic and KIP-848 sessions and heartbeats of a second or less, so expiry is quick.
    "group.min.session.timeout.ms": 250,
    "group.consumer.min.session.timeout.ms": 500,
    "group.consumer.session.timeout.ms": 3000,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.heartbeat.interval.ms": 500,
    # Targets computed at the epoch bump, on the coordinator thread (Kafka 4.4: 1 s, offloaded).
    "group.consumer.assignment.interval.ms": 0,
    "group.consumer.assignor.offload.enable": False,
    # One node: one replica, one offsets partition (created quickly, every group on it).
    "offsets.topic.num.partitions": 1,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
    "default.replication.factor": 1,
    # Few threads on a small shared machine.
    "num.network.threads": 2,
    "num.io.threads": 2,
    "background.threads": 2,
    "group.coordinator.threads": 1,
    "share.coordinator.threads": 1,
    "num.recovery.threads.per.data.dir": 1,
    "log.cleaner.threads": 1,
}
"""Settings suited to tests, under the caller's (Kafka's names)."""
NODE_ID = 1
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 15.0


class KafkaUnavailable(RuntimeError):
    """No Kafka broker could be started here (jars or java missing, or it failed)."""


def libs() -> Path:
    override = os.environ.get("KAFKA_LIBS")
    folder = Path(override) if override else DEFAULT_LIBS
    if not any(folder.glob("kafka_2.13-*.jar")):
        raise KafkaUnavailable(
            f"no Kafka broker jars in {folder}: run scripts/ensure-kafka (or set KAFKA_LIBS)"
        )
    return folder


def java_command() -> str:
    java = os.environ.get("JAVA") or shutil.which("java")
    if java is None:
        raise KafkaUnavailable("no java on PATH (Kafka needs Java 17+)")
    return java


def setting_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass
class KafkaBroker:
    """A running broker. `bootstrap` is HOST:PORT for clients; `settings` what it was given."""

    host: str
    port: int
    controller_port: int
    log_dir: Path
    settings: dict[str, str]
    process: subprocess.Popen[bytes]
    started_in_s: float = 0.0
    """From launching the format step to the first FindCoordinator answered."""
    formatted_in_s: float = 0.0
    """The format step's part of it (a JVM of its own)."""
    api_versions_in_s: float = 0.0
    """From launching the format step to the first ApiVersions answered without error."""
    _answered_at: float = field(default=0.0, repr=False)
    _scratch: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @classmethod
    def start(
        cls,
        settings: Mapping[str, object] = {},
        *,
        log_dir: Path | None = None,
        jvm_options: Sequence[str] = JVM_OPTIONS,
        attempts: int = 3,
    ) -> KafkaBroker:
        """Start a broker with `TEST_SETTINGS` under `settings` (in a temporary log dir unless
        one is given) and wait until it serves groups."""
        merged = {k: setting_text(v) for k, v in {**TEST_SETTINGS, **settings}.items()}
        scratch = None
        if log_dir is None:
            scratch = tempfile.TemporaryDirectory(prefix="kafka-")
            log_dir = Path(scratch.name)
        folder = log_dir
        began = formatted = 0.0

        def launch() -> KafkaBroker:
            nonlocal began, formatted
            began = time.monotonic()
            data = folder / "data"
            shutil.rmtree(data, ignore_errors=True)
            port, controller_port = free_port(), free_port()
            config = folder / "server.properties"
            config.write_text(_properties(merged, data, port, controller_port), encoding="utf-8")
            (folder / "log4j2.properties").write_text(_log_config(folder), encoding="utf-8")
            problem = _format(config, jvm_options)
            formatted = time.monotonic()
            if problem:
                raise GiveUp(problem)  # not a port race: trying again would fail alike
            process = _launch(folder, config, jvm_options)
            return cls("127.0.0.1", port, controller_port, folder, merged, process)

        def unavailable(problem: str) -> Exception:
            return KafkaUnavailable(f"Kafka {KAFKA_VERSION} did not start: {problem}")

        broker = first_serving(attempts, launch, START_TIMEOUT_S, scratch, unavailable)
        broker.started_in_s = time.monotonic() - began
        broker.formatted_in_s = formatted - began
        broker.api_versions_in_s = broker._answered_at - began
        broker._scratch = scratch
        return broker

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def serving(self) -> bool:
        """Whether it answers ApiVersions (when it first did is kept) and FindCoordinator."""
        if not self._answered_at and api_versions_answered(self.host, self.port):
            self._answered_at = time.monotonic()
        return bool(self._answered_at) and coordinator_found(self.host, self.port)

    def log_tail(self, lines: int = 5) -> str:
        text = ""
        for name in ("server.log", "stdout.log"):
            with contextlib.suppress(OSError):
                text += (self.log_dir / name).read_text(errors="replace")
        return " | ".join(text.strip().splitlines()[-lines:])

    def rss_bytes(self) -> int:
        """The JVM's resident set size now (Linux /proc), 0 where it cannot be read."""
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        """Stop the JVM (SIGTERM: a controlled shutdown, then SIGKILL) and remove a temporary
        log dir."""
        stop_process_group(self.process, STOP_TIMEOUT_S)
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def kill(self) -> None:
        """SIGKILL the JVM (a crash), leaving its log dir."""
        kill_process_group(self.process)

    def __enter__(self) -> KafkaBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running_kafka(
    settings: Mapping[str, object] = {}, *, jvm_options: Sequence[str] = JVM_OPTIONS
) -> Iterator[KafkaBroker]:
    """`with running_kafka({...}) as kafka: ...kafka.bootstrap...` (as `KafkaBroker.start`)."""
    broker = KafkaBroker.start(settings, jvm_options=jvm_options)
    try:
        yield broker
    finally:
        broker.stop()


def _java(jvm_options: Sequence[str], log_config: Path | None) -> list[str]:
    logging = [f"-Dlog4j2.configurationFile={log_config}"] if log_config else []
    return [java_command(), *jvm_options, *logging, "-cp", f"{libs()}/*"]


def _format(config: Path, jvm_options: Sequence[str]) -> str:
    """`kafka-storage format -t <new cluster id> -c server.properties`: '' or the error."""
    cluster_id = "-"
    while cluster_id.startswith("-"):  # as Kafka's Uuid.randomUuid: not read as an option
        cluster_id = urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    done = subprocess.run(
        [*_java(jvm_options, config.parent / "log4j2.properties"), "kafka.tools.StorageTool",
         "format", "-t", cluster_id, "-c", str(config)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=START_TIMEOUT_S,
    )  # fmt: skip
    if done.returncode != 0:
        output = (done.stderr + done.stdout).decode(errors="replace").splitlines()
        return f"kafka-storage format failed: {_reason(output)}"
    return ""


def _reason(lines: Sequence[str]) -> str:
    """The exception's message from a JVM's output (not its stack), else its last line."""
    for line in lines:
        if "Exception: " in line:
            return line.split("Exception: ", 1)[1].strip()
    return next((line for line in reversed(lines) if line.strip()), "no output")


def _launch(log_dir: Path, config: Path, jvm_options: Sequence[str]) -> subprocess.Popen[bytes]:
    with (log_dir / "stdout.log").open("ab") as out:
        return subprocess.Popen(
            [*_java(jvm_options, log_dir / "log4j2.properties"), "kafka.Kafka", str(config)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent,
        )  # fmt: skip


def _properties(settings: Mapping[str, str], data: Path, port: int, controller_port: int) -> str:
    fixed = {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data),
    }
    return "".join(f"{key}={value}\n" for key, value in {**fixed, **settings}.items())


def _log_config(log_dir: Path) -> str:
    """Warnings and errors to server.log; the broker's start and stop lines and the group
    coordinator's account of each group (epoch bumps, expiries) too."""
    return "\n".join(
        [
            "appender.file.type = File",
            "appender.file.name = file",
            f"appender.file.fileName = {log_dir / 'server.log'}",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = [%d] %p %m (%c)%n",
            "rootLogger.level = WARN",
            "rootLogger.appenderRef.file.ref = file",
            "logger.server.name = kafka.server.KafkaRaftServer",
            "logger.server.level = INFO",
            "logger.groups.name = org.apache.kafka.coordinator.group",
            "logger.groups.level = INFO",
            "",
        ]
    )


def _request(api_key: int, version: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, 1, len(b"peers")) + b"peers"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _answer(connection: socket.socket) -> bytes:
    size = struct.unpack(">i", _read(connection, 4))[0]
    return _read(connection, size)


def _read(connection: socket.socket, size: int) -> bytes:
    chunks = b""
    while len(chunks) < size:
        chunk = connection.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("closed")
        chunks += chunk
    return chunks


def api_versions_answered(host: str, port: int) -> bool:
    """True once the broker answers ApiVersions (v0) without error."""
    with socket.create_connection((host, port), timeout=2.0) as connection:
        connection.sendall(_request(ApiKey.API_VERSIONS, 0, b""))
        return bool(struct.unpack(">ih", _answer(connection)[:6])[1] == 0)


def coordinator_found(host: str, port: int) -> bool:
    """ApiVersions, FindCoordinator and DescribeGroups (v0) for a group: True once all answer
    without error (the broker processes requests, the offsets topic's partition is loaded)."""
    with socket.create_connection((host, port), timeout=2.0) as connection:
        connection.sendall(_request(ApiKey.API_VERSIONS, 0, b""))
        if struct.unpack(">ih", _answer(connection)[:6])[1] != 0:
            return False
        group = struct.pack(">h", len(b"peers-ready")) + b"peers-ready"
        connection.sendall(_request(ApiKey.FIND_COORDINATOR, 0, group))
        if struct.unpack(">ih", _answer(connection)[:6])[1] != 0:
            return False
        # FindCoordinator answers once the partition has a leader; its groups are served once
        # loaded (before: COORDINATOR_LOAD_IN_PROGRESS). DescribeGroups v0: [error, ...].
        connection.sendall(_request(ApiKey.DESCRIBE_GROUPS, 0, struct.pack(">i", 1) + group))
        return bool(struct.unpack(">iih", _answer(connection)[:10])[2] == 0)
