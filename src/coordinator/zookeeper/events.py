"""The event log of ZooKeeper-coordinated consumers: the coordinator's schema, written by each
consumer.

Lines are of the current schema (`rebalance.events`), one JSON object a line, with `group_type`
"zookeeper" (absent means a classic group), `node` -1 (no coordinator node wrote it) and
`generation` null (0.8 has no generations); `member` is the consumer id. Each consumer appends
to a file of its own, `zookeeper-<consumer id>.jsonl`, in a directory it may share with a
coordinator's log: `rebalance report DIR` reads them all. Events are rare (a few per
rebalance), so each is written and flushed as it happens, on the caller's thread.

The types and fields they write (classic names where the meaning is the same, `zk_*` types
of their own) are declared with everything else in `rebalance.event_schema`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import IO, Any

from rebalance.event_schema import EventType
from rebalance.events import Event

GROUP_TYPE = "zookeeper"
NO_NODE = -1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class ConsumerEventLog:
    """Appends one consumer's events to `<directory>/zookeeper-<consumer id>.jsonl`."""

    def __init__(self, directory: Path, consumer_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"zookeeper-{_UNSAFE.sub('_', consumer_id)}.jsonl"
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")

    def emit(self, event_type: EventType, group: str, member: str, **fields: Any) -> None:
        if self._file is None:
            return
        event = Event(event_type, int(time.time() * 1000), group, None, member,
                      {"group_type": GROUP_TYPE, **fields})  # fmt: skip
        line = json.dumps(event.to_json_dict(NO_NODE), separators=(",", ":"), ensure_ascii=False)
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
