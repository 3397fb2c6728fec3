"""The topics this node hosts: names, stable topic ids, partition logs, and "data arrived" waits.

Each topic lives in `<data_dir>/topics/<name>/`: `topic.json` (name, topic id, partition count,
config overrides; written atomically so an id never changes once handed to a client, with a
CRC so a changed byte is refused rather than read as another id, count or config; a count below
the partition logs beside it is refused too) and one
`<partition>.log` per partition (see `coordinator.partition_log.partition`). Topic ids are
random UUIDs created with the topic and kept across restarts: librdkafka's Fetch v13+ and KIP-848
assignments address topics by id; a topic deleted and created again gets a new id, as in Kafka.

Deleting a topic first renames its directory into `<data_dir>/topics-deleted/` (one atomic
step: after a crash the topic is either still there or gone) and then removes it; leftovers of
an interrupted removal are removed at the next start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.errors import OperationalError
from coordinator.partition_log.partition import PartitionLog, write_atomically
from coordinator.partition_log.sealed import seal_json, unseal_json

logger = logging.getLogger("coordinator.partition_log")

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class InvalidTopicError(ValueError):
    """A topic name Kafka would refuse (INVALID_TOPIC_EXCEPTION)."""


def check_topic_name(name: str) -> None:
    """Kafka's rule: 1-249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    if not _LEGAL_TOPIC.fullmatch(name) or name in {".", ".."}:
        raise InvalidTopicError(f"illegal topic name {name!r}")


@dataclass(eq=False)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog] = field(repr=False)
    configs: dict[str, str] = field(default_factory=dict)
    """Config overrides (validated by `coordinator.partition_log.topic_configs`); the rest are
    defaults."""

    def partition(self, index: int) -> PartitionLog | None:
        return self.partitions[index] if 0 <= index < len(self.partitions) else None


class TopicStore:
    """All topics of the node, loaded from the data dir at construction."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "topics"
        self.root.mkdir(parents=True, exist_ok=True)
        self._trash = data_dir / "topics-deleted"
        if self._trash.exists():
            shutil.rmtree(self._trash)
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._appended = asyncio.Event()
        self._listeners: list[Callable[[Topic], None]] = []
        self._deletion_hooks: list[Callable[[list[str]], Awaitable[None]]] = []
        for meta in sorted(self.root.glob("*/topic.json")):
            self._load(meta)

    def _load(self, meta_path: Path) -> None:
        name, topic_id, count, configs = read_topic_meta(meta_path)
        logs = [PartitionLog(meta_path.parent / f"{i}.log") for i in range(count)]
        self._add(Topic(name, topic_id, logs, configs))

    def _add(self, topic: Topic) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    def __iter__(self) -> Iterator[Topic]:
        return iter(sorted(self._by_name.values(), key=lambda t: t.name))

    def get(self, name: str) -> Topic | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def create(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        topic_id: uuid.UUID | None = None,
    ) -> Topic:
        """Create a topic durably (idempotent: an existing topic is returned unchanged).

        `configs` must already be valid (`coordinator.partition_log.topic_configs`); `topic_id`
        is a new random one unless given (cluster mode: the id the cluster's catalogue chose)."""
        existing = self._by_name.get(name)
        if existing is not None:
            return existing
        check_topic_name(name)
        if partitions < 1:
            raise ValueError(f"topic {name!r} needs at least one partition, got {partitions}")
        directory = self.root / name
        directory.mkdir(parents=True, exist_ok=True)
        topic = Topic(name, topic_id or uuid.uuid4(), [], dict(configs or {}))
        try:
            self._write_meta(topic, partitions)
            topic.partitions = [PartitionLog(directory / f"{i}.log") for i in range(partitions)]
        except OSError:  # disk full: leave no half-made topic for a restart to find
            for log in topic.partitions:
                log.close()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        self._add(topic)
        logger.info("created topic %s with %d partitions (id %s)", name, partitions, topic.topic_id)
        self.changed(topic)
        return topic

    def add_partitions(self, topic: Topic, total: int) -> None:
        """Grow `topic` to `total` partitions (more than it has), durably."""
        if total <= len(topic.partitions):
            raise ValueError(f"topic {topic.name} has {len(topic.partitions)} partitions already")
        self._write_meta(topic, total)
        directory = self.root / topic.name
        topic.partitions.extend(
            PartitionLog(directory / f"{i}.log") for i in range(len(topic.partitions), total)
        )
        logger.info("topic %s grew to %d partitions", topic.name, total)
        self.changed(topic)

    def set_configs(self, topic: Topic, configs: Mapping[str, str]) -> None:
        """Replace the config overrides of `topic` (already validated), durably."""
        previous = topic.configs
        topic.configs = dict(configs)
        try:
            self._write_meta(topic, len(topic.partitions))
        except BaseException:
            topic.configs = previous
            raise

    def delete(self, topic: Topic) -> None:
        """Remove `topic`, its logs and its metadata (see the module docstring); the caller
        then awaits `announce_deleted` so that what refers to the topic forgets it."""
        if self._by_name.get(topic.name) is not topic:
            raise KeyError(topic.name)
        del self._by_name[topic.name]
        del self._by_id[topic.topic_id]
        for log in topic.partitions:
            log.close()
        self._trash.mkdir(exist_ok=True)
        doomed = self._trash / str(topic.topic_id)
        os.replace(self.root / topic.name, doomed)
        _fsync_directory(self.root)
        shutil.rmtree(doomed)
        logger.info("deleted topic %s (id %s)", topic.name, topic.topic_id)

    def on_deleted(self, hook: Callable[[list[str]], Awaitable[None]]) -> Callable[[], None]:
        """Await `hook(names)` after topics are deleted (the group coordinator removes their
        committed offsets there); returns the function that removes the hook."""
        self._deletion_hooks.append(hook)
        return lambda: self._deletion_hooks.remove(hook)

    async def announce_deleted(self, names: list[str]) -> None:
        for hook in list(self._deletion_hooks):
            await hook(names)

    def _write_meta(self, topic: Topic, partitions: int) -> None:
        meta = {
            "name": topic.name,
            "topic_id": str(topic.topic_id),
            "partitions": partitions,
            "configs": topic.configs,
        }
        write_atomically(self.root / topic.name / "topic.json", seal_json(meta))

    def subscribe(self, listener: Callable[[Topic], None]) -> Callable[[], None]:
        """Call `listener(topic)` after a topic is created or gets more partitions (the hook
        the ZooKeeper broker registration keeps `/brokers/topics` current with); returns the
        function that unsubscribes it. Listeners must not block."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def changed(self, topic: Topic) -> None:
        """Tell the listeners that `topic` was created or grew (every path that does either
        calls this once it is durable)."""
        for listener in list(self._listeners):
            listener(topic)

    def notify_appended(self) -> None:
        """Wake every Fetch waiting for data."""
        self._appended.set()
        self._appended = asyncio.Event()

    async def wait_for_append(self, timeout: float) -> None:
        """Return when any partition's high watermark moves, or after `timeout` seconds."""
        event = self._appended
        if timeout <= 0:
            return
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return

    def close(self) -> None:
        for topic in self._by_name.values():
            for log in topic.partitions:
                log.close()


def read_topic_meta(meta_path: Path) -> tuple[str, uuid.UUID, int, dict[str, str]]:
    """Name, topic id, partition count and config overrides of a `topic.json` (read only);
    `OperationalError` naming the file if it is damaged or disagrees with its directory."""
    try:
        meta = unseal_json(meta_path.read_bytes())
        name, topic_id, count = meta["name"], uuid.UUID(meta["topic_id"]), meta["partitions"]
        configs = {str(k): str(v) for k, v in meta.get("configs", {}).items()}
        if name != meta_path.parent.name:
            raise ValueError(f"names topic {name!r}")
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"partition count {count!r}")
        beyond = sorted(p.name for p in meta_path.parent.glob("*.log") if _index(p) >= count)
        if beyond:
            raise ValueError(f"{count} partitions, but {', '.join(beyond)} beside it")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise OperationalError(
            f"{meta_path}: unreadable topic metadata ({exc}); restore it from a backup"
        ) from exc
    return name, topic_id, count, configs


def _index(log_path: Path) -> int:
    """The partition a `<N>.log` file is of (-1 for another name)."""
    return int(log_path.stem) if log_path.stem.isdigit() else -1


def _fsync_directory(path: Path) -> None:
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
