"""The topics this node hosts: names, stable topic ids, partition logs, and "data arrived" waits.

Each topic lives in `<data_dir>/topics/<name>/`: `topic.json` (name, topic id, partition count,
written atomically so an id never changes once handed to a client) and one `<partition>.log` per
partition (see `coordinator.log.partition`). Topic ids are random UUIDs created with the topic
and kept across restarts: librdkafka's Fetch v13+ and KIP-848 assignments address topics by id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.errors import OperationalError
from coordinator.log.partition import PartitionLog

logger = logging.getLogger("coordinator.log")

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

    def partition(self, index: int) -> PartitionLog | None:
        return self.partitions[index] if 0 <= index < len(self.partitions) else None


class TopicStore:
    """All topics of the node, loaded from the data dir at construction."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "topics"
        self.root.mkdir(parents=True, exist_ok=True)
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._appended = asyncio.Event()
        self._listeners: list[Callable[[Topic], None]] = []
        for meta in sorted(self.root.glob("*/topic.json")):
            self._load(meta)

    def _load(self, meta_path: Path) -> None:
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            name, topic_id, count = meta["name"], uuid.UUID(meta["topic_id"]), meta["partitions"]
        except (ValueError, KeyError, TypeError) as exc:
            raise OperationalError(
                f"{meta_path}: unreadable topic metadata ({exc}); restore it from a backup"
            ) from exc
        logs = [PartitionLog(meta_path.parent / f"{i}.log") for i in range(int(count))]
        self._add(Topic(name, topic_id, logs))

    def _add(self, topic: Topic) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    def __iter__(self) -> Iterator[Topic]:
        return iter(sorted(self._by_name.values(), key=lambda t: t.name))

    def get(self, name: str) -> Topic | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def create(self, name: str, partitions: int) -> Topic:
        """Create a topic durably (idempotent: an existing topic is returned unchanged)."""
        existing = self._by_name.get(name)
        if existing is not None:
            return existing
        check_topic_name(name)
        if partitions < 1:
            raise ValueError(f"topic {name!r} needs at least one partition, got {partitions}")
        directory = self.root / name
        directory.mkdir(parents=True, exist_ok=True)
        topic_id = uuid.uuid4()
        meta = {"name": name, "topic_id": str(topic_id), "partitions": partitions}
        _write_atomically(directory / "topic.json", json.dumps(meta).encode())
        logs = [PartitionLog(directory / f"{i}.log") for i in range(partitions)]
        topic = Topic(name, topic_id, logs)
        self._add(topic)
        logger.info("created topic %s with %d partitions (id %s)", name, partitions, topic_id)
        self.changed(topic)
        return topic

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


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
