"""`rebalance repair`: find damaged partition logs in a data dir and, when asked, cut them.

A server refuses to start on a partition file whose damage is followed by more data
(`LogCorruptError`): dropping it could drop valid records. This is the way out. Without
`--truncate` it only reports, for every damaged file, where the damage is, what is intact
before it and what follows it (how many bytes, and how many of the batches there still pass
their CRC). With `--truncate` it copies each damaged file into
`DATA_DIR/backups/repair-<UTC time>/` (same relative path), then cuts the file at the start of
the bad batch and fsyncs it: what Kafka's log recovery does to a segment, keeping every batch
before the first bad one. Consumers whose committed offsets lie past the new end are answered
OFFSET_OUT_OF_RANGE and follow their `auto.offset.reset`.

It takes the data dir's lock first, so it never runs beside a server on the same dir. Exit
status: 0 when nothing is damaged or everything damaged was cut, 1 when damage is reported but
left in place (or the data dir cannot be used).
"""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from coordinator.errors import OperationalError
from coordinator.node.data_dir import DirectoryLock
from coordinator.partition_log.partition import Damage, scan_log

BACKUPS_DIR = "backups"


@dataclass(frozen=True)
class PartitionReport:
    """One partition file: its intact batches, and the damage, if any."""

    path: Path
    batches: int
    next_offset: int
    """The offset the next record would get: one past the last intact batch."""
    damage: Damage | None
    intact_after: int = 0
    """Batches after the damage that still pass their CRC (lost by a repair)."""

    def describe(self, data_dir: Path) -> str:
        name = self.path.relative_to(data_dir)
        if self.damage is None:
            return f"{name}: intact, {self.batches} batches, offsets 0-{self.next_offset - 1}"
        damage = self.damage
        kept = f"{self.batches} intact batches before it (offsets up to {self.next_offset - 1})"
        if damage.torn_tail:
            follows = "nothing follows it (a torn write: the server cuts it at start)"
        else:
            follows = (
                f"{damage.dropped_bytes} bytes from there on, {self.intact_after} more batches "
                f"in them pass their CRC and would be lost"
            )
        return f"{name}: damaged at byte {damage.position} ({damage.reason}); {kept}; {follows}"


def inspect_partition(path: Path) -> PartitionReport:
    """Scan one partition file (read only)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        scan = scan_log(fd)
        next_offset = scan.batches[-1][0].last_offset + 1 if scan.batches else 0
        intact_after = 0
        if scan.damage is not None and not scan.damage.torn_tail:
            after = scan_log(fd, start=scan.damage.claimed_end, first_offset=None)
            intact_after = len(after.batches)
        return PartitionReport(path, len(scan.batches), next_offset, scan.damage, intact_after)
    finally:
        os.close(fd)


def partition_files(data_dir: Path) -> list[Path]:
    """Every partition log of the data dir (`topics/<topic>/<partition>.log`)."""
    return sorted((data_dir / "topics").glob("*/*.log"))


def cut(report: PartitionReport, data_dir: Path, backup_root: Path) -> Path:
    """Copy the file under `backup_root` (fsynced), then cut it at the damage; the copy's path."""
    assert report.damage is not None
    backup = backup_root / report.path.relative_to(data_dir)
    backup.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(report.path, backup)
    _fsync(backup)
    _fsync(backup.parent)
    with open(report.path, "r+b") as handle:
        handle.truncate(report.damage.position)
        handle.flush()
        os.fsync(handle.fileno())
    return backup


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def repair(data_dir: Path, *, truncate: bool, say: Callable[[str], None] = print) -> int:
    """Report (and with `truncate`, cut) the damaged partition logs of `data_dir`; exit status."""
    if not data_dir.is_dir():
        raise OperationalError(
            f"data dir {os.path.abspath(data_dir)} does not exist; give the --data-dir of the "
            "stopped server"
        )
    lock = DirectoryLock.acquire(data_dir)
    try:
        reports = [inspect_partition(path) for path in partition_files(data_dir)]
        damaged = [r for r in reports if r.damage is not None]
        say(
            f"{len(reports)} partition logs in {data_dir}: "
            + (f"{len(damaged)} damaged" if damaged else "all intact")
        )
        for report in damaged:
            say(f"  {report.describe(data_dir)}")
        if not damaged:
            return 0
        if not truncate:
            say("nothing changed; add --truncate to cut each damaged log at its damage")
            return 1
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        backup_root = data_dir / BACKUPS_DIR / f"repair-{stamp}"
        for report in damaged:
            assert report.damage is not None
            backup = cut(report, data_dir, backup_root)
            say(
                f"  cut {report.path.relative_to(data_dir)} at byte {report.damage.position} "
                f"({report.damage.dropped_bytes} bytes dropped); the whole file is kept in "
                f"{backup}"
            )
        return 0
    finally:
        lock.release()
