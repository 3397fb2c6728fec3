"""Exclusive use of a data dir: checked, created only under an existing parent, and locked.

Two servers on one data dir would hand out the same offsets and lose each other's records, so a
server takes `DirectoryLock.acquire` before it reads or writes anything there and holds it until
it has closed every file. The lock is `flock` on `DIR/.lock` (the name Kafka uses): it belongs
to the open file, so the kernel drops it when the process dies, however it dies, and a restart
after `kill -9` is never blocked by a stale lock file. The file keeps the holder's pid, which
the refusal names. `flock` also conflicts between two opens in one process, so a second embedded
server on the same dir is refused too. The descriptor is not inherited by child processes.

Only the directory itself is created, never its parents: a data dir whose parent is missing is
most often a volume that is not mounted, and creating it would fill the wrong disk. A directory
this lock created is removed again by `release(remove_created=True)`, so a start that fails
leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
from pathlib import Path

from coordinator.errors import OperationalError

LOCK_FILE = ".lock"


class DataDirError(OperationalError):
    """A data dir that cannot be used: not a directory, no parent, not writable, in use."""


class DataDirInUseError(DataDirError):
    """Another server (or another server in this process) holds the directory's lock."""


class DirectoryLock:
    """The exclusive lock on one directory, held from `acquire` until `release`."""

    def __init__(self, directory: Path, fd: int, created: bool) -> None:
        self.directory = directory
        self.created = created
        self._fd = fd

    def __repr__(self) -> str:
        state = "held" if self._fd >= 0 else "released"
        return f"<DirectoryLock {self.directory} {state}>"

    @classmethod
    def acquire(
        cls, directory: Path, *, what: str = "data dir", option: str = "--data-dir"
    ) -> DirectoryLock:
        """Check, create if needed, and lock `directory`; `DataDirError` says why not.

        `what` and `option` name the directory in messages ("data dir", "--data-dir").
        """
        shown = os.path.abspath(directory)
        created = _create(directory, shown, what, option)
        try:
            fd = _open_lock_file(directory, shown, what, option)
        except BaseException:
            if created:
                shutil.rmtree(directory, ignore_errors=True)
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise DataDirInUseError(
                    f"{what} {shown} is in use by {holder} (it holds {shown}/{LOCK_FILE}); "
                    f"stop it, or choose another {option}"
                ) from None
            raise DataDirError(
                f"cannot lock {what} {shown}: {exc.strerror} (the file system must support "
                f"flock); choose another {option}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        return cls(directory, fd, created)

    def keep(self) -> None:
        """The start succeeded: `release(remove_created=True)` no longer removes the directory."""
        self.created = False

    def release(self, *, remove_created: bool = False) -> None:
        """Let go of the lock; with `remove_created`, delete the directory if `acquire` made it
        (for a start that failed: it leaves nothing behind)."""
        if self._fd < 0:
            return
        if remove_created and self.created:
            shutil.rmtree(self.directory, ignore_errors=True)
        os.close(self._fd)
        self._fd = -1


def _create(directory: Path, shown: str, what: str, option: str) -> bool:
    """Make sure `directory` is a directory; True if it was created here."""
    if directory.is_dir():
        return False
    if directory.exists() or directory.is_symlink():
        raise DataDirError(f"{what} {shown} is not a directory; choose another {option}")
    parent = os.path.dirname(shown)
    if not os.path.isdir(parent):
        raise DataDirError(
            f"{what} {shown}: its parent {parent} does not exist (a volume not mounted?); "
            f"create the parent first, or choose another {option}"
        )
    try:
        directory.mkdir()
    except FileExistsError:  # made by someone else meanwhile: the lock decides
        return False
    except OSError as exc:
        raise DataDirError(
            f"cannot create {what} {shown}: {exc.strerror}; fix the permissions of {parent}, "
            f"or choose another {option}"
        ) from None
    return True


def _open_lock_file(directory: Path, shown: str, what: str, option: str) -> int:
    if not os.access(directory, os.W_OK | os.X_OK):
        problem = "read-only file system" if _read_only(directory) else "permission denied"
        raise DataDirError(
            f"{what} {shown} is not writable ({problem}); fix its permissions, "
            f"or choose another {option}"
        )
    try:
        return os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DataDirError(
            f"cannot open {shown}/{LOCK_FILE}: {exc.strerror}; fix the permissions of {what} "
            f"{shown}, or choose another {option}"
        ) from None


def _read_only(directory: Path) -> bool:
    with contextlib.suppress(OSError):
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    return False


def _holder(fd: int) -> str:
    """Who holds the lock, as the lock file says: "process 1234" (or "this process")."""
    try:
        pid = int(os.pread(fd, 32, 0).decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return "another process (its pid is not recorded yet)"
    if pid == os.getpid():
        return f"this process (pid {pid}: another server in it)"
    return f"process {pid}"
