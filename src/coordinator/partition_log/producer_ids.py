"""Producer ids for idempotent producers, unique across restarts.

kafka-python (and the Java client) enable idempotence by default and will not produce without
an InitProducerId answer. Ids are handed out from blocks: the end of the current block is
written (atomically, fsynced) to `<data_dir>/producer-ids` before any id of it is used, so after
a crash the next block starts past every id that could have been given out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from coordinator.errors import OperationalError

BLOCK_SIZE: Final = 1000


class ProducerIdAllocator:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "producer-ids"
        try:
            self._next = int(self.path.read_text(encoding="ascii").strip())
        except FileNotFoundError:
            self._next = 0
        except ValueError as exc:
            raise OperationalError(
                f"{self.path}: not a producer id counter ({exc}); restore it from a backup, or "
                f"delete it if no idempotent producer's ids matter"
            ) from exc
        self._block_end = self._next

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._reserve(self._next + BLOCK_SIZE)
        producer_id = self._next
        self._next += 1
        return producer_id

    def _reserve(self, block_end: int) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="ascii") as handle:
            handle.write(f"{block_end}\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self._block_end = block_end
