"""`rebalance serve --log-format json`: one JSON object a line on stderr, for log shippers.

Each line has `time` (ISO 8601, UTC, milliseconds), `level`, `logger` and `message` (the line the
text format shows after the logger's name), and `exception` (its traceback as text) when one is
logged; the group coordinator's state changes add `group` and the fields they name (see
`coordinator.groups.group_log`).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

#: Attributes every `LogRecord` has; anything else on a record was passed by `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
