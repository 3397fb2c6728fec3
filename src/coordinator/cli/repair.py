"""`rebalance repair`: find damaged partition logs in a data dir and, when asked, cut them.

A server refuses to start on a partition file whose damage is followed by an intact batch
(`LogCorruptError`, see `coordinator.partition_log.recovery`): dropping it could drop valid
records. This is the way out. Without `--truncate` it only reports, for every damaged file,
where the damage is, what is intact before it and what follows it (the intact batches found
past the damage and their offsets, which `--truncate` would drop, and how many bytes). With
`--truncate` it copies each damaged file into
`DATA_DIR/backups/repair-<UTC time>/` (same relative path), then cuts the file at the start of
the bad batch and fsyncs it: what Kafka's log recovery does to a segment, keeping every batch
before the first bad one. Consumers whose committed offsets lie past the new end are answered
OFFSET_OUT_OF_RANGE and follow their `auto.offset.reset`.

It also reports the data dir's other files (`topic.json`, `<partition>.start`, `producer-ids`
and, from the command line, `groups.sqlite`), read only: what each holds, or the one line a
start would refuse with; it never changes them (a backup is their remedy).

It takes the data dir's lock first, so it never runs beside a server on the same dir. Exit
status: 0 when nothing is damaged or every damaged log was cut and nothing else is damaged, 1
when damage is reported but left in place (or the data dir cannot be used).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from coordinator.errors import OperationalError
from coordinator.node.data_dir import DirectoryLock
from coordinator.partition_log.batch import BatchInfo
from coordinator.partition_log.recovery import Damage, batch_to_end, scan_log
from coordinator.partition_log.sealed import DamagedFileError, unseal_number
from coordinator.partition_log.topics import read_topic_meta

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
    """Intact batches from the first one found after the damage (lost by a repair)."""
    offsets_after: tuple[int, int] | None = None
    """First and last offset of those batches."""

    def describe(self, data_dir: Path) -> str:
        name = self.path.relative_to(data_dir)
        if self.damage is None:
            return f"{name}: intact, {self.batches} batches, offsets 0-{self.next_offset - 1}"
        damage = self.damage
        kept = f"{self.batches} intact batches before it (offsets up to {self.next_offset - 1})"
        if damage.next_intact is None:
            follows = "no intact batch follows it (a torn write: the server cuts it at start)"
        else:
            assert self.offsets_after is not None
            first, last = self.offsets_after
            follows = (
                f"{self.intact_after} intact batches follow from byte {damage.next_intact} "
                f"(offsets {first}-{last}); --truncate would drop them and all "
                f"{damage.dropped_bytes} bytes from the damage on"
            )
        return f"{name}: damaged at byte {damage.position} ({damage.reason}); {kept}; {follows}"


def inspect_partition(path: Path) -> PartitionReport:
    """Scan one partition file (read only)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        scan = scan_log(fd)
        next_offset = scan.batches[-1][0].last_offset + 1 if scan.batches else 0
        report = PartitionReport(path, len(scan.batches), next_offset, scan.damage)
        if scan.damage is None or scan.damage.next_intact is None:
            return report
        intact = intact_from(fd, scan.damage.next_intact)
        first = min(info.base_offset for info in intact) if intact else next_offset
        last = max(info.last_offset for info in intact) if intact else next_offset
        return dataclasses.replace(report, intact_after=len(intact), offsets_after=(first, last))
    finally:
        os.close(fd)


def intact_from(fd: int, position: int) -> list[BatchInfo]:
    """The intact batches from `position` to the end of the file, skipping further damage."""
    found: list[BatchInfo] = []
    while True:
        after = scan_log(fd, start=position, first_offset=None)
        found += [info for info, _ in after.batches]
        if after.damage is None or after.damage.next_intact is None:
            return found
        position = after.damage.next_intact
        if not after.batches and position == after.damage.position:
            # Intact only when read to the end of the file (its length field was overwritten).
            last = batch_to_end(fd, position, after.damage.file_size)
            return found + ([last] if last is not None else [])


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


def other_files(
    data_dir: Path, stores: Mapping[str, Callable[[Path], str]]
) -> list[tuple[str, str, bool]]:
    """(file, what it holds or what is wrong, damaged) for the data dir's files beside the
    partition logs: every `topic.json` and `<partition>.start`, `producer-ids`, and each of
    `stores` (file name -> its read-only inspection, which raises `OperationalError`)."""
    checks: list[tuple[Path, Callable[[Path], object]]] = [
        *((path, read_topic_meta) for path in sorted(data_dir.glob("topics/*/topic.json"))),
        *((path, _read_number) for path in sorted(data_dir.glob("topics/*/*.start"))),
        *((data_dir / name, inspect) for name, inspect in stores.items()),
        (data_dir / "producer-ids", _read_number),
    ]
    found = []
    for path, check in checks:
        if not path.exists():
            continue
        name = str(path.relative_to(data_dir))
        try:
            result = check(path)
        except OperationalError as exc:
            found.append((name, str(exc).removeprefix(f"{path}: "), True))
        else:
            found.append((name, result if isinstance(result, str) else "intact", False))
    return found


def _read_number(path: Path) -> int:
    try:
        return unseal_number(path.read_bytes())
    except DamagedFileError as exc:
        raise OperationalError(f"{path}: damaged ({exc}); restore it from a backup") from None


def repair(
    data_dir: Path,
    *,
    truncate: bool,
    say: Callable[[str], None] = print,
    stores: Mapping[str, Callable[[Path], str]] | None = None,
) -> int:
    """Report (and with `truncate`, cut) the damaged partition logs of `data_dir`, and report
    the damaged files beside them (`other_files`, never changed here); exit status."""
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
        others = other_files(data_dir, stores or {})
        broken = [(name, what) for name, what, bad in others if bad]
        say(
            f"{len(others)} other files: "
            + (f"{len(broken)} damaged (repair does not change them)" if broken else "all intact")
        )
        for name, what, _bad in others:
            say(f"  {name}: {what}")
        status = 1 if broken else 0
        if not damaged:
            return status
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
        return status
    finally:
        lock.release()
