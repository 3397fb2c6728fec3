"""Producer ids for idempotent producers, unique across restarts.

kafka-python (and the Java client) enable idempotence by default and will not produce without
an InitProducerId answer. Ids are handed out from blocks: the end of the current block is
written (atomically, fsynced, with a CRC: `partition_log.sealed`) to `<data_dir>/producer-ids`
before any id of it is used, so after a crash the next block starts past every id that could
have been given out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from coordinator.errors import OperationalError
from coordinator.partition_log.partition import write_atomically
from coordinator.partition_log.sealed import DamagedFileError, seal_number, unseal_number

BLOCK_SIZE: Final = 1000


class ProducerIdAllocator:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "producer-ids"
        try:
            self._next = unseal_number(self.path.read_bytes())
        except FileNotFoundError:
            self._next = 0
        except DamagedFileError as exc:
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
        write_atomically(self.path, seal_number(block_end))
        self._block_end = block_end
